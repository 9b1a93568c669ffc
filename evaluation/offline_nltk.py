"""Make NLTK's WordNet usable with no network access.

NLTK normally downloads its WordNet corpus; here we build it from Debian's
`wordnet-base` and `wordnet-sense-index` files (/usr/share/wordnet). NLTK's reader also
needs a `lexnames` file that Debian does not ship; its 45 lines are the fixed table of the
lexnames(5WN) manual page, written out below.
"""
import os
import shutil
import threading
from pathlib import Path

DEBIAN_WORDNET = Path("/usr/share/wordnet")
REPO_ROOT = Path(__file__).resolve().parent.parent

# lexnames(5WN): file number, lexicographer file name, syntactic category (1 noun, 2 verb,
# 3 adjective, 4 adverb).
LEXNAMES = [
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1),
    ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1),
    ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1),
    ("noun.feeling", 1), ("noun.food", 1), ("noun.group", 1), ("noun.location", 1),
    ("noun.motive", 1), ("noun.object", 1), ("noun.person", 1), ("noun.phenomenon", 1),
    ("noun.plant", 1), ("noun.possession", 1), ("noun.process", 1), ("noun.quantity", 1),
    ("noun.relation", 1), ("noun.shape", 1), ("noun.state", 1), ("noun.substance", 1),
    ("noun.time", 1), ("verb.body", 2), ("verb.change", 2), ("verb.cognition", 2),
    ("verb.communication", 2), ("verb.competition", 2), ("verb.consumption", 2),
    ("verb.contact", 2), ("verb.creation", 2), ("verb.emotion", 2), ("verb.motion", 2),
    ("verb.perception", 2), ("verb.possession", 2), ("verb.social", 2),
    ("verb.stative", 2), ("verb.weather", 2), ("adj.ppl", 3),
]

_lock = threading.Lock()
_ready_dir = None


def nltk_data_dir() -> Path:
    """First entry of $NLTK_DATA, else <repo>/var/nltk_data."""
    env = os.environ.get("NLTK_DATA", "").split(os.pathsep)[0]
    return Path(env) if env else REPO_ROOT / "var" / "nltk_data"


def _lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(LEXNAMES))


def _install(target: Path) -> None:
    """Copy the Debian files (plain files only) and write lexnames; skip what is current."""
    if not (DEBIAN_WORDNET / "data.noun").exists():
        raise RuntimeError(
            "WordNet files missing in /usr/share/wordnet: "
            "apt-get install wordnet-base wordnet-sense-index"
        )
    target.mkdir(parents=True, exist_ok=True)
    for src in DEBIAN_WORDNET.iterdir():
        if not src.is_file():
            continue
        dst = target / src.name
        if not dst.exists() or dst.stat().st_size != src.stat().st_size:
            tmp = dst.with_name(f"{dst.name}.{os.getpid()}.part")
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
    lexnames = target / "lexnames"
    if not lexnames.exists() or lexnames.read_text() != _lexnames_text():
        tmp = lexnames.with_name(f"lexnames.{os.getpid()}.part")
        tmp.write_text(_lexnames_text())
        os.replace(tmp, lexnames)


def ensure_wordnet() -> str:
    """Install WordNet for NLTK under the nltk_data dir, register it, check it works.

    Idempotent; after the first successful call it returns at once. Returns the
    nltk_data directory that holds corpora/wordnet.
    """
    global _ready_dir
    if _ready_dir is not None:
        return _ready_dir
    with _lock:
        if _ready_dir is not None:
            return _ready_dir
        import nltk
        from nltk.stem import WordNetLemmatizer

        data_dir = nltk_data_dir()
        _install(data_dir / "corpora" / "wordnet")
        if str(data_dir) not in nltk.data.path:
            nltk.data.path.append(str(data_dir))
        lemma = WordNetLemmatizer().lemmatize("cars")
        if lemma != "car":
            raise RuntimeError(f"WordNet lemmatizer check failed: cars -> {lemma!r}")
        _ready_dir = str(data_dir)
        return _ready_dir
