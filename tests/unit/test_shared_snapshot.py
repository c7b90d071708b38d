"""The queue gauges' snapshot, shared by the processes of one deployment on a host (real files, real locks):
taken once per interval, by one process at a time, never read by another deployment, never kept where
another user could write."""

import asyncio
import os
from pathlib import Path

import pytest

from app.observability.shared_snapshot import Json, SharedSnapshot, private_directory


class Taker:
    """A refresh that counts its calls and, when told to, waits until it is let go."""

    def __init__(self) -> None:
        self.calls = 0
        self.hold: asyncio.Event | None = None
        self.holding = asyncio.Event()  # set while a call waits to be let go

    async def __call__(self) -> Json:
        assert not (self.holding.is_set() and self.hold is not None and not self.hold.is_set()), "taken twice at once"
        self.calls += 1
        if self.hold is not None:
            self.holding.set()
            await self.hold.wait()
        return {"taken": self.calls}


def test_a_snapshot_younger_than_the_interval_is_used_as_it_is(tmp_path: Path) -> None:
    take = Taker()
    first, second = SharedSnapshot("vhost db", 60, tmp_path), SharedSnapshot("vhost db", 60, tmp_path)

    async def both() -> tuple[Json, Json]:
        return await first.get(take), await second.get(take)

    assert asyncio.run(both()) == ({"taken": 1}, {"taken": 1})
    assert take.calls == 1


def test_an_older_one_is_taken_again(tmp_path: Path) -> None:
    take = Taker()
    shared = SharedSnapshot("vhost db", 0, tmp_path)

    async def twice() -> tuple[Json, Json]:
        return await shared.get(take), await shared.get(take)

    assert asyncio.run(twice()) == ({"taken": 1}, {"taken": 2})


def test_while_one_process_takes_it_the_others_show_the_last_one_and_take_nothing(tmp_path: Path) -> None:
    take = Taker()
    taking, waiting = SharedSnapshot("vhost db", 0, tmp_path), SharedSnapshot("vhost db", 0, tmp_path)

    async def scenario() -> list[Json]:
        seen = [await taking.get(take)]  # the first snapshot
        take.hold = asyncio.Event()
        second = asyncio.create_task(taking.get(take))
        await take.holding.wait()
        seen.append(await waiting.get(take))  # the lock is held: the last snapshot, not a third take
        take.hold.set()
        seen.append(await second)
        return seen

    assert asyncio.run(scenario()) == [{"taken": 1}, {"taken": 1}, {"taken": 2}]
    assert take.calls == 2


def test_none_while_the_very_first_is_being_taken(tmp_path: Path) -> None:
    take = Taker()
    take.hold = asyncio.Event()
    shared = SharedSnapshot("vhost db", 60, tmp_path)

    async def scenario() -> Json:
        first = asyncio.create_task(shared.get(take))
        await take.holding.wait()
        meanwhile = await shared.get(take)
        take.hold.set()  # type: ignore[union-attr]
        await first
        return meanwhile

    assert asyncio.run(scenario()) is None
    assert take.calls == 1


def test_another_deployment_never_reads_it(tmp_path: Path) -> None:
    take = Taker()

    async def scenario() -> tuple[Json, Json]:
        mine = await SharedSnapshot("vhost-a db-a", 60, tmp_path).get(take)
        theirs = await SharedSnapshot("vhost-b db-a", 60, tmp_path).get(take)
        return mine, theirs

    assert asyncio.run(scenario()) == ({"taken": 1}, {"taken": 2})


def test_without_a_directory_every_process_takes_its_own() -> None:
    take = Taker()

    async def twice() -> None:
        await SharedSnapshot("vhost db", 60, None).get(take)
        await SharedSnapshot("vhost db", 60, None).get(take)

    asyncio.run(twice())
    assert take.calls == 2


def test_the_directory_is_private_to_this_user(tmp_path: Path) -> None:
    directory = private_directory(tmp_path)
    assert directory == tmp_path / f"remit-{os.getuid()}"
    assert directory.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o750])
def test_a_directory_others_can_enter_or_write_is_not_used(tmp_path: Path, mode: int) -> None:
    (tmp_path / f"remit-{os.getuid()}").mkdir(mode=0o700)
    (tmp_path / f"remit-{os.getuid()}").chmod(mode)
    assert private_directory(tmp_path) is None


def test_a_link_in_its_place_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / f"remit-{os.getuid()}").symlink_to(elsewhere)
    assert private_directory(tmp_path) is None


def test_a_snapshot_file_that_is_a_link_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    take = Taker()
    planted = tmp_path / "planted.json"
    planted.write_text('{"taken": "forged"}')
    shared = SharedSnapshot("vhost db", 60, tmp_path)
    snapshot = tmp_path / shared.file_name
    snapshot.symlink_to(planted)
    assert asyncio.run(shared.get(take)) == {"taken": 1}
    assert planted.read_text() == '{"taken": "forged"}'
    assert not snapshot.is_symlink()
