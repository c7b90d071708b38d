"""The dead-letter store: the archiver that fills it, and the review, replay, discard and retention services."""
