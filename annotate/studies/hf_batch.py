"""A batch whose items come from a Hugging Face dataset saved to disk (`import_batch
HEADER --from-hf DIR`): a lab that already keeps its items as a `datasets` dataset loads it
without writing JSONL.

The dataset's rows must have the batch's item keys as columns (`item_id`, `input`,
`candidates`, ...; studies.md). Arrow gives every row every column, so a key that a row
lacks arrives as None: None-valued keys are dropped (recursively) before the row is
checked, exactly as if the JSONL line had left them out. The rows then pass through the
one batch importer, so the same checks apply and a bad dataset is refused whole; in its
`line N` messages line 1 is the header and dataset row r (counting from 0) is line r + 2.
"""
import json
import tempfile

from annotate.studies.batch_format import BatchInvalid

SPOOL_BYTES = 16 * 1024 * 1024  # kept in memory up to this size, then on disk


def _without_nones(value):
    if isinstance(value, dict):
        return {k: _without_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nones(v) for v in value]
    return value


def load_rows(path, split=None):
    """The rows of the dataset saved at `path` (a Dataset, or one split of a DatasetDict)."""
    from datasets import Dataset, load_from_disk

    try:
        loaded = load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise BatchInvalid([f"{path}: not a dataset saved with save_to_disk ({exc})"]) from None
    if not isinstance(loaded, Dataset):
        names = list(loaded)
        name = split or (names[0] if len(names) == 1 else None)
        if name not in loaded:
            raise BatchInvalid([f"{path}: choose a split with --split (one of {', '.join(names)})"])
        loaded = loaded[name]
    return loaded


def batch_from_dataset(header_bytes, path, split=None):
    """A seekable binary JSONL file: the header line, then one line per dataset row."""
    rows = load_rows(path, split)
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the caller closes it
    spool.write(header_bytes.strip() + b"\n")
    for row in rows:
        spool.write(json.dumps(_without_nones(row), ensure_ascii=False).encode("utf-8") + b"\n")
    spool.seek(0)
    return spool
