"""manage.py egises PATH [--variant code|paper]: EGISES-JSD of one model's summaries."""
import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.personalization.egises import VARIANTS, egises
from evaluation.text import STOPWORD_LISTS
from humeval.jsonl import json_lines


class Command(BaseCommand):
    help = "EGISES, DEGRESS and accuracy (JSD) from a JSONL of documents with references and summaries."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--variant", choices=VARIANTS, default="code")
        parser.add_argument("--stopwords", choices=STOPWORD_LISTS, default="nltk",
                            help="stopword list for JSD: nltk (179 words, as the EGISES reference code; "
                                 "default) or sklearn")

    def handle(self, path, variant, stopwords, **options):
        documents = []
        try:
            with open(path, encoding="utf-8") as handle:
                for number, doc, error in json_lines(handle):
                    if error:
                        raise CommandError(f"{path}: line {number}: invalid JSON ({error.msg})")
                    if not isinstance(doc, dict) or "text" not in doc:
                        raise CommandError(f"{path}: line {number}: expected an object with text")
                    documents.append(doc)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        result = egises(documents, variant, stopwords)
        if result["errors"]:
            for err in result["errors"]:
                self.stderr.write(f"document {err['doc_id']}: {err['error']}")
        if result["n_documents"] == 0:
            raise CommandError(f"{path}: no usable document")
        self.stdout.write(json.dumps(result))
