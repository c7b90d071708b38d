from app.cli.main import run

run()
