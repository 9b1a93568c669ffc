"""Handles the task page uses to keep unsent answers in the browser (static/js/drafts.js).

A draft is stored in the page's localStorage under the study and an *item handle*: an
HMAC of the item's and the annotator's primary keys, stable across assignments of the
same item to the same person (so answers survive an expiry and a fresh assignment),
different for the next person on a shared browser (who never sees the previous one's
unsent answers or comment), revealing neither the item id nor a database id.

The form's field names and values are the assignment's blinding tokens (annotate.desk.blinding),
which change with every assignment; so each radio also carries an *answer handle*: an
HMAC of (item, annotator, real question id, real value), stable across assignments of the
item and opaque like the tokens. A draft keeps the handles of the ticked answers.
"""
from django.utils.crypto import salted_hmac

HANDLE_CHARS = 20


def item_handle(item_pk: int, annotator_pk: int | None) -> str:
    return salted_hmac("humeval.drafts.item", f"{item_pk}\x1f{annotator_pk}").hexdigest()[:HANDLE_CHARS]


def answer_handle(item_pk: int, annotator_pk: int, question: str, value: str) -> str:
    """The handle of one answer (real question id and value) to an item, for one annotator."""
    message = f"{item_pk}\x1f{annotator_pk}\x1f{question}\x1f{value}"
    return salted_hmac("humeval.drafts.answer", message).hexdigest()[:HANDLE_CHARS]
