""""Did you mean ...?" for a mistyped plan key or metric name: the names other tools use
for the same thing (LaMP's scripts, lm-evaluation-harness, Hugging Face `generate`) first,
then the closest spelling."""
import difflib

# name elsewhere -> ours (used only when ours is a valid choice where the name was found)
ALIASES = {
    "top_k": "k", "topk": "k", "num_retrieve": "k", "n_retrieve": "k", "num_docs": "k", "retrieve_k": "k",
    "max_new_tokens": "max_tokens", "max_length": "max_tokens", "max_gen_toks": "max_tokens",
    "temp": "temperature", "until": "stop", "stop_sequences": "stop", "ranker": "retriever",
    "ret_type": "retriever", "retrieval": "retriever", "model_name": "model", "name": "id",
    "rouge-1": "rouge1", "rouge-l": "rougeL", "rougel": "rougeL", "accuracy": "lamp_accuracy", "f1": "lamp_f1",
    "mae": "lamp_mae", "rmse": "lamp_rmse", "overlap": "annotations_per_item",
}


def closest(name: str, options) -> str | None:
    """The valid option `name` most likely meant, or None."""
    options = list(options)
    alias = ALIASES.get(str(name)) or ALIASES.get(str(name).lower())
    if alias in options:
        return alias
    lowered = {o.lower(): o for o in options}
    if str(name).lower() in lowered:
        return lowered[str(name).lower()]
    found = difflib.get_close_matches(str(name), options, n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, options) -> str:
    """' (did you mean `x`?)' or ''."""
    guess = closest(name, options)
    return f" (did you mean `{guess}`?)" if guess else ""
