"""parapush.program_entry: a stop while a program imports ends it quietly with exit 0; the
program gets its arguments, Python's default signal handlers and returns its exit code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from parapush import program_entry

SLOW_PROGRAM = textwrap.dedent("""
    import sys
    import time

    try:
        print("importing", flush=True)  # inside the try: the test's stop, sent on this line, lands in it
        time.sleep(30)  # a slow import (rclpy, MuJoCo, the learned models on a loaded machine)
    except Exception:  # imported code that swallows errors must not swallow the stop
        pass
    print("imported", flush=True)


    def main():
        return 5
""")


def start_program(tmp_path, source: str, *arguments: str) -> subprocess.Popen:
    (tmp_path / "slow_program.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    return subprocess.Popen([sys.executable, "-m", "parapush.program_entry", "slow_program", *arguments],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


# What a C extension's initialisation makes of an exception raised into it (rclpy's, seen in CI):
# an ImportError caused by it; and a library that swallows everything and finishes its import.
WRAPPED = SLOW_PROGRAM.replace("except Exception:  # imported code that swallows errors must not swallow the stop\n"
                               "    pass",
                               "except BaseException as error:\n"
                               "    raise ImportError('initialization failed') from error")
SWALLOWED = SLOW_PROGRAM.replace("except Exception:", "except BaseException:")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("source", [SLOW_PROGRAM, WRAPPED, SWALLOWED], ids=["raised", "wrapped", "swallowed"])
def test_a_stop_while_the_program_imports_exits_zero_without_a_traceback(tmp_path, stop, source):
    assert source == SLOW_PROGRAM or source.count("BaseException")
    process = start_program(tmp_path, source)
    try:
        assert process.stdout.readline() == "importing\n"
        process.send_signal(stop)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert ("imported" in out) == (source is SWALLOWED)  # main() never runs: its 5 would be the exit code
    assert "Traceback" not in err
    assert f"slow_program: stopped by {stop.name} while starting" in err


def test_the_program_gets_its_arguments_and_the_default_handlers_and_its_exit_code_is_returned(tmp_path):
    source = textwrap.dedent("""
        import signal
        import sys


        def main():
            default = signal.getsignal(signal.SIGINT) is signal.default_int_handler
            assert default and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
            print(sys.argv)
            return 7
    """)
    process = start_program(tmp_path, source, "--ros-args", "-r", "__node:=x")
    out, err = process.communicate(timeout=20)
    assert process.returncode == 7, err
    assert out.strip() == str(["slow_program", "--ros-args", "-r", "__node:=x"])


@pytest.mark.parametrize("arguments", [[], ["--ros-args"]])
def test_without_a_module_it_prints_its_usage_and_exits_2(arguments, capsys):
    assert program_entry.main(arguments) == 2
    assert "usage: python -m parapush.program_entry MODULE" in capsys.readouterr().err
