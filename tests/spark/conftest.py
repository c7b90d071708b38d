"""One SparkSession for the whole spark suite: starting Spark costs ~10 s, a DataFrame test ~1 s."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from reconciliation.job import build_spark

# spark-submit machinery inside pyspark finds SPARK_HOME through `python3` on PATH: use the venv's.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_spark(
        {
            "spark.master": "local[1]",
            "spark.sql.shuffle.partitions": "1",
            "spark.default.parallelism": "1",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "1g",
            "spark.sql.adaptive.enabled": "false",  # tiny inputs: planning rounds cost more than they save
        }
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
