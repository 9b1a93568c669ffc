"""Our LaMP prompts and retrieval queries equal LaMP's own (LaMP/prompts/prompts.py),
written out here by hand for a small profile (no truncation: the budget is large)."""
import pytest

from models_runtime.lamp import build_prompt, corpus_text, detect_task, retrieval_query

P_PAPERS = [{"id": "1", "title": "Deep nets", "abstract": "we train nets"},
            {"id": "2", "title": "Old trees", "abstract": "we prune trees"}]
P_NEWS = [{"id": "1", "title": "Rain today", "text": "it rained"}, {"id": "2", "title": "Sun", "text": "it shone"}]
P_TEXT = [{"id": "1", "text": "good morning all"}, {"id": "2", "text": "see you soon"}]

CASES = [
    ("LaMP-1", 'For an author who has written the paper with the title "A study", which reference is related? '
               'Just answer with [1] or [2] without explanation. [1]: "Nets for all" [2]: "Trees for all"',
     P_PAPERS,
     'For an author who has written the paper with the title, and "Deep nets", and "Old trees" "A study", which '
     'reference is related? Just answer with [1] or [2] without explanation. [1]: "Nets for all" [2]: "Trees for all"',
     "Nets for all Trees for all", "Deep nets we train nets"),
    ("LaMP-2", "Which tag does this movie relate to among the following tags? Just answer with the tag name "
               "without further explanation. tags: [comedy, crime] description: a bank heist",
     [{"id": "1", "description": "a robbery", "tag": "crime"}, {"id": "2", "description": "jokes", "tag": "comedy"}],
     'the tag for the movie: "a robbery" is "crime" , and the tag for the movie: "jokes" is "comedy" . Which tag '
     "does this movie relate to among the following tags? Just answer with the tag name without further "
     "explanation. tags: [comedy, crime] description: a bank heist",
     "a bank heist", "a robbery"),
    ("LaMP-3", "What is the score of the following review on a scale of 1 to 5? just answer with 1, 2, 3, 4, or 5 "
               "without further explanation. review: fine stuff",
     [{"id": "1", "text": "great product", "score": "5"}, {"id": "2", "text": "bad", "score": "1"}],
     '5 is the score for "great product" , and 1 is the score for "bad" . What is the score of the following '
     "review on a scale of 1 to 5? just answer with 1, 2, 3, 4, or 5 without further explanation. review: fine stuff",
     "fine stuff", "great product"),
    ("LaMP-4", "Generate a headline for the following article: storms hit the coast", P_NEWS,
     '"Rain today" is the title for "it rained" , and "Sun" is the title for "it shone" . Generate a headline for '
     "the following article: storms hit the coast",
     "storms hit the coast", "Rain today it rained"),
    ("LaMP-5", "Generate a title for the following abstract of a paper: we grow forests", P_PAPERS,
     '"Deep nets" is a title for "we train nets" , and "Old trees" is a title for "we prune trees" . Following the '
     "given patterns Generate a title for the following abstract of a paper: we grow forests",
     "we grow forests", "Deep nets we train nets"),
    ("LaMP-6", "Generate a subject for the following email: lunch on friday", P_NEWS,
     '"Rain today" is the title for "it rained" , and "Sun" is the title for "it shone" . Generate a subject for '
     "the following email: lunch on friday",
     "lunch on friday", "it rained"),
    ("LaMP-7", "Paraphrase the following tweet without any explanation before or after it: hello there", P_TEXT,
     '"good morning all" , and "see you soon"  are written by a person. Following the given patterns Paraphrase '
     "the following tweet without any explanation before or after it: hello there",
     "hello there", "good morning all"),
]


@pytest.mark.parametrize(("task", "question", "profile", "prompt", "query", "corpus0"), CASES,
                         ids=[c[0] for c in CASES])
def test_prompt_query_and_corpus_equal_lamps(task, question, profile, prompt, query, corpus0):
    record = {"id": "q", "task": task, "input": question, "profile": profile}
    assert build_prompt(record, profile, budget=1000) == prompt
    assert retrieval_query(record) == query
    assert corpus_text(profile[0], task) == corpus0


def test_task_from_the_profile_fields_when_no_task_key():
    record = {"input": "Generate a title for the following abstract of a paper: x", "profile": P_PAPERS}
    assert detect_task(record) == "LaMP-5"
    assert retrieval_query(record) == "x"
    assert detect_task({"input": "Paraphrase: hi", "profile": P_TEXT}) == "LaMP-7"


def test_query_falls_back_to_the_whole_input_without_its_marker():
    record = {"task": "LaMP-5", "input": "Write a title", "profile": P_PAPERS}
    assert retrieval_query(record) == "Write a title"
