"""The PostgreSQL repositories: each port of app/storage/ports/ over the unit of work's connection. The SQL of
the modules behind the ports lives here and nowhere else."""
