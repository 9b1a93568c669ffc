"""The annotator's pages: home (their studies), the task page, skip/extend, my judgments."""
