from app.cli.remit import run

run()
