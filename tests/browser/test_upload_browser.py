"""The admin batch upload form in Debian's Chromium: a bad file shows every `line N:` error
and writes nothing; a good file loads and links to the new study."""
import json

import pytest

from annotate.models import Item, Study
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def page(new_page, logged_in):
    """A page logged in as an admin."""
    return logged_in(new_page(), make_user("upload-admin", "admins"))


def batch(*items):
    head = {"study": {"slug": "browser-upload", "kind": "aspect_pairwise", "title": "Plots"}}
    return ("\n".join(json.dumps(o) for o in (head, *items)) + "\n").encode()


def plot(item_id, premise="A premise."):
    return {"item_id": item_id, "premise": premise,
            "candidates": [{"id": "a", "text": "Plot one."}, {"id": "b", "text": "Plot two."}]}


def test_upload_form_in_a_browser(page, live_server):
    page.goto(f"{live_server.url}/batches/upload/")
    page.set_input_files("#batch", files=[{"name": "bad.jsonl", "mimeType": "application/x-ndjson",
                                           "buffer": batch(plot("p1"), plot("p2", premise=""), plot("p1"))}])
    page.click("#upload-submit")
    page.wait_for_selector("#upload-errors", timeout=30000)
    errors = page.locator("#upload-errors li").all_inner_texts()
    assert errors == ["line 3: 'premise' must be a non-empty string",
                      "line 4: duplicate item_id 'p1' (first on line 2)"]
    assert Study.objects.count() == 0

    page.set_input_files("#batch", files=[{"name": "good.jsonl", "mimeType": "application/x-ndjson",
                                           "buffer": batch(plot("p1"), plot("p2"))}])
    page.click("#upload-submit")
    page.wait_for_selector("#upload-result", timeout=30000)
    assert "2 new items" in page.locator("#upload-result").inner_text()
    assert page.locator("#upload-result a").get_attribute("href") == "/studies/browser-upload/"
    assert Item.objects.filter(study__slug="browser-upload").count() == 2
