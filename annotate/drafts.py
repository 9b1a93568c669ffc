"""Handles the task page uses to keep unsent answers in the browser (static/js/drafts.js).

A draft is stored in the page's localStorage under the study and an *item handle*: an
HMAC of the item's primary key, stable across assignments of the same item (so answers
survive an expiry and a fresh assignment) but revealing neither the item id nor the
database id to the annotator.
"""
from django.utils.crypto import salted_hmac

HANDLE_CHARS = 20


def item_handle(item_pk: int) -> str:
    return salted_hmac("humeval.drafts.item", str(item_pk)).hexdigest()[:HANDLE_CHARS]
