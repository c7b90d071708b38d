"""In-memory fakes of remit's ports: the repositories and unit of work (app/storage/ports/), the republisher
and an external core. Behave like the real adapters where the code under test can tell, nothing more."""
