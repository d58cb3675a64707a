"""Living with generated code: re-rendering a hand-edited script keeps the edits (a three-way
merge against `.loopgen/<script>.base`), `check` catches stale scripts, `diff` previews."""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import black
import pytest
from data import classification_npz
from helpers import EXAMPLES, npz, records, run_cli, run_python, tree, without
from test_cli import failed

SPEC_SOURCE = (EXAMPLES / "mnist_mlp.py").read_text()

GRADIENTS = "        gradients = tape.gradient(loss, model.trainable_variables)\n"
CLIP = "        gradients, _ = tf.clip_by_global_norm(gradients, 1.0)  # my edit: clip\n"


def write_spec(folder: Path, *changes: tuple[str, str]) -> Path:
    """The MNIST example as the user's spec.py, with (old, new) text replacements."""
    text = SPEC_SOURCE
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = folder / "spec.py"
    path.write_text(text)
    return path


def render(spec: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("render", str(spec), "-o", str(out), *args)


def clean_render(spec: Path, *args: str) -> str:
    """What loopgen renders for `spec`, to stdout: no file is involved."""
    proc = run_cli("render", str(spec), *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def edit_train_step(out: Path) -> str:
    """The user's edit: gradient clipping inside the train step. Returns the edited text."""
    text = out.read_text()
    assert text.count(GRADIENTS) == 1
    edited = text.replace(GRADIENTS, GRADIENTS + CLIP)
    out.write_text(edited)
    return edited


def ok(proc: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert proc.returncode == 0, proc.stderr
    for phrase in phrases:
        assert phrase in proc.stderr + proc.stdout, (phrase, proc.stderr)


# --- render onto an existing script ------------------------------------------------------------


def test_untouched_script_is_replaced_by_the_new_render(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    ok(render(spec, out), f"wrote {out}")
    assert out.read_text() == clean_render(spec)
    assert "EPOCHS = 5" in out.read_text()
    # Nothing of the user's to back up; the new render is the next merge base.
    assert list(tree(tmp_path)) == [
        ".loopgen/.gitignore", ".loopgen/loopgen_runtime.py.base", ".loopgen/train.py.base",
        "loopgen_runtime.py", "spec.py", "train.py"
    ]  # fmt: skip
    assert (tmp_path / ".loopgen" / "train.py.base").read_text() == out.read_text()


def test_edit_in_the_train_step_and_spec_changes_both_survive(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edited = edit_train_step(out)

    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    proc = render(spec, out)
    ok(proc, f"merged the new render into your edits in {out}", ".loopgen/train.py.orig")
    new = clean_render(spec)
    # Exactly the new render plus the user's line: nothing lost, nothing else changed.
    assert out.read_text() == new.replace(GRADIENTS, GRADIENTS + CLIP)
    assert (tmp_path / ".loopgen" / "train.py.orig").read_text() == edited
    assert (tmp_path / ".loopgen" / "train.py.base").read_text() == new

    # The merged script now has a new base: a second spec change merges again.
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"), ("batch_size=64", "batch_size=32"))
    ok(render(spec, out), "merged")
    text = out.read_text()
    assert CLIP in text and "EPOCHS = 5" in text and "BATCH_SIZE = 32" in text
    assert text == clean_render(spec).replace(GRADIENTS, GRADIENTS + CLIP)

    # Same spec again: nothing to do, and the file is left alone.
    before = tree(tmp_path)
    ok(render(spec, out), "up to date")
    assert tree(tmp_path) == before


def test_conflicting_edits_get_markers_a_failure_and_a_way_back(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edited = out.read_text().replace("EPOCHS = 2\n", "EPOCHS = 3  # mine\n")
    out.write_text(edited)

    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    proc = render(spec, out)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    text = out.read_text()
    opening = text.index("<<<<<<< train.py (your edits)\n")
    conflict = text[opening : text.index(">>>>>>> new render\n") + len(">>>>>>> new render\n")]
    assert "EPOCHS = 3  # mine\n=======\n" in conflict and "EPOCHS = 5\n" in conflict
    # The message lists each conflict by line, and says how to get the user's version back.
    start = text[:opening].count("\n") + 1
    end = start + conflict.count("\n") - 1
    assert "1 conflict(s)" in proc.stderr and f"lines {start}-{end}" in proc.stderr
    backup = tmp_path / ".loopgen" / "train.py.orig"
    assert backup.read_text() == edited
    assert f"cp {backup} {out}" in proc.stderr

    # Rendering over unresolved markers is refused, naming them.
    before = tree(tmp_path)
    failed(render(spec, out), "still has conflict markers", f"lines {start}, {end}")
    assert tree(tmp_path) == before

    # The way back the message gives: the user's file, merged against its own base (found by
    # the checksum in its header) as if the render never happened.
    subprocess.run(shlex.split(f"cp {backup} {out}"), check=True)
    assert out.read_text() == edited
    ok(render(write_spec(tmp_path), out), "up to date")
    assert out.read_text() == edited

    # Resolving the conflict (keeping the spec's side) leaves a script the next render accepts.
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    proc = render(spec, out)
    assert proc.returncode == 1
    resolved = re.sub(
        r"<<<<<<< .*?\n.*?=======\n(.*?)>>>>>>> new render\n", r"\1", out.read_text(), flags=re.S
    )
    out.write_text(resolved)
    ok(render(spec, out), "up to date")
    assert out.read_text() == resolved == clean_render(spec)


def reformat(text: str) -> str:
    """What a user's formatter or editor might do: wider lines, spaces around `=`, trailing
    blanks. Black at loopgen's settings undoes all of it."""
    text = black.format_str(text, mode=black.Mode(line_length=120))
    text = text.replace("EPOCHS = 2\n", "EPOCHS=2   \n").replace("\n\n\ndef ", "\n\n\n\ndef ")
    return text


def test_reformatting_only_edits_are_not_conflicts(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    reformatted = reformat(out.read_text())
    assert reformatted != out.read_text()
    out.write_text(reformatted)

    spec = write_spec(
        tmp_path, ("epochs=2", "epochs=5"), ("log_every_steps=200", "log_every_steps=7")
    )
    ok(render(spec, out), f"wrote {out}")
    assert out.read_text() == clean_render(spec)  # a clean render again: future renders replace
    assert (tmp_path / ".loopgen" / "train.py.orig").read_text() == reformatted


def test_reformatted_edited_script_merges_with_the_edit_kept(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edit_train_step(out)
    out.write_text(reformat(out.read_text()))
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    ok(render(spec, out), "merged")
    assert out.read_text() == clean_render(spec).replace(GRADIENTS, GRADIENTS + CLIP)


def test_a_script_that_does_not_compile_still_merges_and_says_so(tmp_path):
    """A file saved in the middle of an edit: black cannot format it, the merge goes line by
    line, and the render fails loudly rather than hand back a script that cannot run."""
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edited = out.read_text().replace(GRADIENTS, GRADIENTS + "        gradients = [\n")
    out.write_text(edited)
    proc = render(write_spec(tmp_path, ("epochs=2", "epochs=5")), out)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "does not compile" in proc.stderr and ".loopgen/train.py.orig" in proc.stderr
    assert "EPOCHS = 5" in out.read_text() and "        gradients = [\n" in out.read_text()
    assert (tmp_path / ".loopgen" / "train.py.orig").read_text() == edited


def test_force_replaces_an_edited_script_and_keeps_it(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edited = edit_train_step(out)
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    ok(render(spec, out, "--force"), ".loopgen/train.py.orig")
    assert out.read_text() == clean_render(spec)
    assert (tmp_path / ".loopgen" / "train.py.orig").read_text() == edited


def test_without_its_base_an_edited_script_is_never_guessed_at(tmp_path):
    """A fresh clone where `.loopgen/` was not committed."""
    out = tmp_path / "train.py"
    first = write_spec(tmp_path)
    ok(render(first, out))
    edited = edit_train_step(out)
    state = tmp_path / ".loopgen"
    for path in state.iterdir():
        path.unlink()
    state.rmdir()

    changed = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    before = tree(tmp_path)
    failed(
        render(changed, out),
        "edited by hand",
        ".loopgen/train.py.base",
        "check out the spec",
        "--force",
    )
    assert tree(tmp_path) == before

    # What the message says to do: render the spec it came from (records the base, leaves the
    # file alone), then the new spec.
    first = write_spec(tmp_path)
    ok(render(first, out), "up to date")
    assert out.read_text() == edited
    assert (state / "train.py.base").read_text() == clean_render(first)
    changed = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    ok(render(changed, out), "merged")
    assert CLIP in out.read_text() and "EPOCHS = 5" in out.read_text()


def test_a_fresh_clone_has_the_base_and_none_of_the_backups(tmp_path):
    """What git keeps of .loopgen/ is enough to merge in a fresh clone; backups stay local."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }  # fmt: skip

    def git(cwd: Path, *args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    repo = tmp_path / "repo"
    repo.mkdir()
    out = repo / "train.py"
    ok(render(write_spec(repo), out))
    edit_train_step(out)
    ok(render(write_spec(repo, ("epochs=2", "epochs=3")), out), "merged")  # makes backups
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spec and script")
    tracked = git(repo, "ls-files").split()
    assert ".loopgen/train.py.base" in tracked and ".loopgen/.gitignore" in tracked
    assert not [name for name in tracked if name.endswith((".orig", ".orig.base"))]

    git(tmp_path, "clone", "-q", str(repo), "clone")
    clone = tmp_path / "clone"
    spec = write_spec(clone, ("epochs=2", "epochs=5"))
    ok(render(spec, clone / "train.py"), "merged")
    assert (clone / "train.py").read_text() == clean_render(spec).replace(
        GRADIENTS, GRADIENTS + CLIP
    )


# --- check -------------------------------------------------------------------------------------


def test_check_fails_on_a_stale_script_with_the_command_that_fixes_it(tmp_path):
    out = tmp_path / "train.py"
    spec = write_spec(tmp_path)
    ok(render(spec, out))
    ok(run_cli("check", str(spec), str(out)), "up to date")
    edit_train_step(out)
    ok(run_cli("check", str(spec), str(out)), "up to date", "with hand edits")

    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    before = tree(tmp_path)
    stderr = failed(run_cli("check", str(spec), str(out)), "out of date", "the spec changed")
    assert tree(tmp_path) == before  # check writes nothing
    fix = re.search(r"(loopgen render .*)$", stderr.strip()).group(1)
    assert fix == f"loopgen render {spec} -o {out}"
    ok(run_cli(*shlex.split(fix)[1:]), "merged")
    ok(run_cli("check", str(spec), str(out)), "up to date", "with hand edits")


def test_check_names_the_flags_a_script_was_rendered_with(tmp_path):
    out = tmp_path / "train.py"
    spec = write_spec(tmp_path)
    ok(render(spec, out, "--variant", "mirrored", "--set", "data.batch_size=32"))
    stderr = failed(run_cli("check", str(spec), str(out)), "out of date")
    assert "rendered with --variant mirrored --set data.batch_size=32" in stderr
    ok(
        run_cli(
            "check", str(spec), str(out), "--variant", "mirrored", "--set", "data.batch_size=32"
        )
    )


def test_check_fails_on_unresolved_conflict_markers(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    out.write_text(out.read_text().replace("EPOCHS = 2\n", "EPOCHS = 3\n"))
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    assert render(spec, out).returncode == 1
    failed(run_cli("check", str(spec), str(out)), "unresolved conflict markers")


def test_check_on_a_missing_or_foreign_script(tmp_path):
    spec = write_spec(tmp_path)
    failed(run_cli("check", str(spec), str(tmp_path / "nope.py")), "does not exist", "render")
    foreign = tmp_path / "mine.py"
    foreign.write_text("print('hello')\n")
    failed(run_cli("check", str(spec), str(foreign)), "no loopgen header")


# --- diff --------------------------------------------------------------------------------------


def test_diff_shows_what_a_render_would_change_and_writes_nothing(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edit_train_step(out)
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))

    before = tree(tmp_path)
    proc = run_cli("diff", str(spec), str(out))
    assert proc.returncode == 1, proc.stderr  # a difference, as `git diff --exit-code` says it
    assert tree(tmp_path) == before
    assert "\n-EPOCHS = 2\n+EPOCHS = 5\n" in proc.stdout
    assert "clip" not in proc.stdout  # the edit is kept, so not part of the change

    # Exactly what the render then does.
    old = out.read_text()
    ok(render(spec, out))
    expected = difflib.unified_diff(
        old.splitlines(keepends=True),
        out.read_text().splitlines(keepends=True),
        fromfile=str(out),
        tofile=f"{out} (re-rendered)",
    )
    assert proc.stdout == "".join(expected)
    proc = run_cli("diff", str(spec), str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    assert "would not change" in proc.stderr


def test_diff_warns_of_conflicts_and_of_a_foreign_file(tmp_path):
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    out.write_text(out.read_text().replace("EPOCHS = 2\n", "EPOCHS = 3\n"))
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    before = tree(tmp_path)
    proc = run_cli("diff", str(spec), str(out))
    assert proc.returncode == 1 and "+<<<<<<< train.py (your edits)" in proc.stdout
    assert "1 conflict(s)" in proc.stderr
    assert tree(tmp_path) == before
    out.write_text("print('mine')\n")
    proc = run_cli("diff", str(spec), str(out))
    failed(proc, "not written by loopgen")
    assert proc.returncode == 1  # an error keeps its code


# --- the workflow, run -------------------------------------------------------------------------


@pytest.mark.slow
def test_merged_script_runs_with_the_edit_and_the_new_spec(tmp_path):
    data = npz(classification_npz(tmp_path / "train.npz", 96, (28, 28)))
    small = ("--set", f"data.train={data}", "--set", "loop.log_every_steps=2")
    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out, *small))
    text = out.read_text()
    # An edit the run shows: the train step prints the clipped global norm. XLA cannot
    # compile tf.print: the user drops jit_compile, as the comment above the step says.
    mine = CLIP + '        tf.print("clipped by hand:", tf.linalg.global_norm(gradients))\n'
    assert "to debug here, drop jit_compile" in text
    text = text.replace("@tf.function(jit_compile=xla)", "@tf.function")
    out.write_text(text.replace(GRADIENTS, GRADIENTS + mine))
    spec = write_spec(tmp_path, ("epochs=2", "epochs=3"))
    ok(render(spec, out, *small), "merged")

    proc = run_python(out, "--output-dir", "run", cwd=tmp_path)
    norms = [float(line.split()[-1]) for line in proc.stderr.splitlines() if "clipped by" in line]
    assert len(norms) == 3 * 2  # the edit ran at every step of the spec's 3 epochs (96 / 64)
    assert max(norms) <= 1.0 + 1e-5
    assert [r["epoch"] for r in records(tmp_path / "run") if "epoch" in r][-1] == 3


# --- atomic output -----------------------------------------------------------------------------


class Interrupted(KeyboardInterrupt):
    pass


class CutShort:
    """A file that takes half of what is written to it, then the user presses Ctrl-C."""

    def __init__(self, file):
        self.file = file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, text):
        self.file.write(text[: len(text) // 2])
        raise Interrupted()


@pytest.mark.parametrize("when", ["writing", "renaming"])
def test_an_interrupted_render_leaves_the_old_script_whole(tmp_path, monkeypatch, when):
    """Interrupted while writing the first file, or just before the script's rename (backup
    and base already written): the script is as it was, no temporary file is left, and the
    next render still merges against the right base."""
    from loopgen import output
    from loopgen.output import files

    out = tmp_path / "train.py"
    ok(render(write_spec(tmp_path), out))
    edit_train_step(out)
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    new = clean_render(spec)
    before = tree(tmp_path)

    real_fdopen, real_replace = files.os.fdopen, files.os.replace

    def replace(src, dst):
        if Path(dst) == out:
            raise Interrupted()
        return real_replace(src, dst)

    if when == "writing":
        monkeypatch.setattr(files.os, "fdopen", lambda *a, **k: CutShort(real_fdopen(*a, **k)))
    else:
        monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(Interrupted):
        output.write_script(out, new)
    monkeypatch.undo()

    after = tree(tmp_path)
    assert after["train.py"] == before["train.py"]
    assert not [name for name in after if name.endswith(".tmp")]
    if when == "writing":
        assert after == before
    ok(render(spec, out), "merged")
    assert out.read_text() == new.replace(GRADIENTS, GRADIENTS + CLIP)


def test_the_fix_command_check_prints_runs_as_printed_with_its_flags(tmp_path):
    out = tmp_path / "train.py"
    flags = ("--variant", "mirrored", "--set", "data.batch_size=32")
    ok(render(write_spec(tmp_path), out, *flags))
    spec = write_spec(tmp_path, ("epochs=2", "epochs=5"))
    stderr = failed(run_cli("check", str(spec), str(out), *flags), "out of date")
    fix = re.search(r"(loopgen render .*)$", stderr.strip()).group(1)
    assert shlex.split(fix)[1:] == ["render", str(spec), "-o", str(out), *flags]
    ok(run_cli(*shlex.split(fix)[1:]))
    ok(run_cli("check", str(spec), str(out), *flags), "up to date")


# --- the runtime beside the script -----------------------------------------------------------

OLD_IDENTITY = "loopgen 0.0.9, runtime 0123456789abcdef"


def as_of_an_older_loopgen(path: Path) -> None:
    """Makes a clean render (a script or its runtime) into one an older loopgen wrote: its
    runtime identity another, its header checksum stamped again (it reads as unedited)."""
    from loopgen.render import runtime, stamp

    text = path.read_text().replace(runtime.identity(), OLD_IDENTITY)
    field = "runtime" if path.name == "loopgen_runtime.py" else "script"
    unstamped = re.sub(rf"{field} sha256 [0-9a-f]{{16}}", f"{field} sha256 {'0' * 16}", text)
    path.write_text(stamp.stamp(unstamped, field))
    assert stamp.is_unedited(path.read_text())


def test_a_render_beside_an_older_runtime_updates_it_and_names_the_scripts_left_behind(tmp_path):
    """Two scripts share a folder and its runtime. One rendered again by a newer loopgen brings
    the runtime up to date and names the other, which its own check would stop."""
    spec = write_spec(tmp_path)
    ok(render(spec, tmp_path / "a.py"))
    ok(render(spec, tmp_path / "b.py"))
    runtime = tmp_path / "loopgen_runtime.py"
    for path in (tmp_path / "a.py", tmp_path / "b.py", runtime):
        as_of_an_older_loopgen(path)
    proc = render(spec, tmp_path / "b.py")
    ok(proc, f"wrote {runtime} (the run's machinery the script imports: this loopgen's)")
    assert "rendered for its old version stop at their start" in proc.stderr
    assert f": {tmp_path / 'a.py'}\n" in proc.stderr and f"{tmp_path / 'b.py'}\n" in proc.stderr
    assert OLD_IDENTITY not in runtime.read_text() + (tmp_path / "b.py").read_text()
    assert OLD_IDENTITY in (tmp_path / "a.py").read_text()  # a render of its own brings it on


def test_hand_edits_in_the_runtime_survive_a_render(tmp_path):
    """The runtime is the user's too: an edit there is merged, not overwritten."""
    spec = write_spec(tmp_path)
    out = tmp_path / "train.py"
    ok(render(spec, out))
    runtime = tmp_path / "loopgen_runtime.py"
    mine = '    """Local time with its UTC offset, to the second: 2026-11-23T14:05:09+0100."""\n'
    edit = mine + "    # my edit: UTC everywhere\n"
    assert runtime.read_text().count(mine) == 1
    runtime.write_text(runtime.read_text().replace(mine, edit))
    ok(render(write_spec(tmp_path, ("epochs=2", "epochs=5")), out))
    assert "# my edit: UTC everywhere" in runtime.read_text()
    assert "EPOCHS = 5" in out.read_text()
    # An edit is not a change of what loopgen wrote: check holds both up to date.
    ok(run_cli("check", str(spec), str(out)), f"{runtime} is up to date with", "(with hand edits)")


NO_TENSORFLOW = without("tensorflow", "keras", "numpy")


@pytest.mark.parametrize("runtime", ["missing", "of another render"])
def test_a_script_without_its_runtime_stops_with_one_line_before_tensorflow_loads(
    runtime, tmp_path
):
    from loopgen.render import render_runtime

    script = tmp_path / "train.py"
    script.write_text((EXAMPLES.parent / "generated" / "mnist_mlp.py").read_text())
    if runtime != "missing":
        (tmp_path / "loopgen_runtime.py").write_text(
            render_runtime().replace(render_identity(), OLD_IDENTITY)
        )
    proc = subprocess.run(
        [sys.executable, "-c", NO_TENSORFLOW, str(script), "--epochs", "1"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()  # one line, no traceback
    found = "none" if runtime == "missing" else OLD_IDENTITY
    assert line == (
        f"{script} needs the loopgen_runtime.py of its render beside it ({render_identity()}; "
        f"found {found}): render it again, loopgen render SPEC -o {script} with the spec its "
        "header names (your edits to both files are merged)"
    )


def render_identity() -> str:
    from loopgen.render import runtime

    return runtime.identity()


def test_check_and_diff_look_at_the_runtime_too(tmp_path):
    """An out-of-date runtime beside an up-to-date script: `check` fails naming it, `diff`
    shows what a render would change in it (and exits 1, as for the script)."""
    spec = write_spec(tmp_path)
    out = tmp_path / "train.py"
    ok(render(spec, out))
    runtime = tmp_path / "loopgen_runtime.py"
    ok(run_cli("diff", str(spec), str(out)), f"a re-render would not change {runtime}")
    as_of_an_older_loopgen(runtime)
    checked = run_cli("check", str(spec), str(out))
    assert checked.returncode == 1, checked.stderr
    assert f"{out} is up to date with {spec}" in checked.stdout
    assert f"{runtime} is out of date with {spec}" in checked.stderr
    shown = run_cli("diff", str(spec), str(out))
    assert shown.returncode == 1, shown.stderr
    assert f"+++ {runtime} (re-rendered)" in shown.stdout
    assert f'-RUNTIME = "{OLD_IDENTITY}"' in shown.stdout
    assert f"a re-render would not change {out}" in shown.stderr
