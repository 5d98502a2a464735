"""``scenemetrics.fileio``: atomic writes whose file mode follows the umask, read without changing it."""

from __future__ import annotations

import builtins
import os
import stat
import sys
import threading

import pytest

from scenemetrics import fileio


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status is Linux's")
def test_the_umask_is_read_without_setting_it(monkeypatch):
    old = os.umask(0o037)
    try:

        def no_umask(*_):
            raise AssertionError("os.umask must not be called where /proc/self/status has the umask")

        monkeypatch.setattr(fileio.os, "umask", no_umask)
        assert fileio._umask() == 0o037
    finally:
        monkeypatch.undo()
        os.umask(old)


def test_the_fallback_restores_the_umask(monkeypatch):
    real_open = builtins.open

    def no_proc(path, *args, **kwargs):
        if str(path) == "/proc/self/status":
            raise OSError("no /proc here")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)
    old = os.umask(0o026)
    try:
        assert fileio._umask() == 0o026
        assert os.umask(0o026) == 0o026  # still in force afterwards
    finally:
        os.umask(old)


def test_written_files_follow_the_umask_while_other_threads_write(tmp_path):
    old = os.umask(0o027)
    try:
        errors: list[BaseException] = []

        def write(i: int) -> None:
            try:
                for j in range(20):
                    fileio.atomic_write_text(tmp_path / f"t{i}" / f"{j}.txt", "x")
            except BaseException as e:  # reported by the assertion below
                errors.append(e)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        modes = {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*.txt")}
        assert modes == {0o640} and len(list(tmp_path.rglob("*.txt"))) == 80
        assert os.umask(0o027) == 0o027  # the process's umask never changed
    finally:
        os.umask(old)
