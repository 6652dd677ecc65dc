"""Did the fix work: re-measure after an action, one module per kind of question."""
