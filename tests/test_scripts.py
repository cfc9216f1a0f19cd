"""The maintainers' entry points in scripts/: each answers ``--help`` and rejects bad arguments with
status 2 before doing any work; ``scripts/recipe`` finds, documents and runs the recipes in
benchmarks/recipes/; no script names a file outside the repository. None of this needs a GPU."""

import fnmatch
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
RECIPES = ROOT / "benchmarks" / "recipes"
ENTRY_POINTS = ["gpu-check", "gpu-check-distributed", "host-overhead", "matmul-survey", "readme-fresh-venv",
                "recipe", "test-only-venv"]
NEEDS = {"matmul-survey": "torch"}  # imported before its arguments are parsed


def run(name, *arguments):
    return subprocess.run([str(SCRIPTS / name), *arguments], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": "/nonexistent-never-written"})


def needs(name):
    module = NEEDS.get(name)
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{name} imports {module}")


def test_scripts_holds_the_supported_entry_points_only():
    assert sorted(p.name for p in SCRIPTS.iterdir()) == ENTRY_POINTS
    assert len(ENTRY_POINTS) <= 8


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_each_entry_point_is_executable_and_answers_help(name):
    needs(name)
    assert os.access(SCRIPTS / name, os.X_OK)
    for flag in ("--help", "-h"):
        result = run(name, flag)
        assert result.returncode == 0, result.stderr
        assert name in result.stdout, result.stdout[:300]
        assert len(result.stdout.splitlines()) >= 3


@pytest.mark.parametrize(("name", "arguments", "says"), [
    ("gpu-check", ["no_such_suite"], "unknown suite 'no_such_suite'"),
    ("gpu-check", ["fft", "--quick"], "unknown suite '--quick'"),
    ("gpu-check", ["__init__"], "unknown suite '__init__'"),
    ("gpu-check-distributed", ["two"], "positive integers"),
    ("gpu-check-distributed", ["2", "0"], "positive integers"),
    ("gpu-check-distributed", ["2", "64", "3"], "positive integers"),
    ("readme-fresh-venv", ["0"], "RUNS must be one positive integer"),
    ("readme-fresh-venv", ["2", "3"], "RUNS must be one positive integer"),
    ("test-only-venv", ["tests/fft"], "takes no arguments"),
    ("host-overhead", ["--repeat", "many"], "invalid int value"),
    ("matmul-survey", ["--case", "no_such_case"], "invalid choice"),
    ("recipe", [], "scripts/recipe --list"),
    ("recipe", ["no-such-recipe"], "unknown recipe 'no-such-recipe'"),
    ("recipe", ["count-sass", "no-such-kind"], "invalid choice: 'no-such-kind'"),
    ("recipe", ["count-sass", "--nvdisasm", "/no/nvdisasm", "cast", "bfloat16", "float8_e5m2", "relu"],
     "'/no/nvdisasm' not found"),
])
def test_bad_arguments_exit_2_with_a_message(name, arguments, says):
    needs(name)
    result = run(name, *arguments)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert says in result.stderr


def test_gpu_check_names_every_suite_when_it_rejects_one():
    suites = sorted(p.stem for p in (ROOT / "benchmarks" / "suites").glob("[!_]*.py"))
    assert run("gpu-check", "nope").stderr.split("known: ")[1].strip().rstrip(")").split() == suites


def test_gpu_check_help_carries_the_device_suite_note():
    # The device suite runs in two parts whose --case patterns must cover its cases between them.
    text = run("gpu-check", "--help").stdout
    patterns = re.findall(r'--case (\S+?)"?(?=\s|$)', text)
    assert patterns, text
    source = (ROOT / "benchmarks" / "suites" / "device.py").read_text()
    names = set(re.findall(r'name="([a-z0-9_]+)"', source))
    names |= set(re.findall(r'_first_launch_case\("([a-z_]+)"', source))
    assert names
    for name in names:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name
    assert "python -m benchmarks.merge" in text


def recipe_names():
    return sorted(p.stem for p in RECIPES.iterdir() if p.suffix in (".py", ".sh"))


def test_recipe_lists_every_recipe_with_its_summary():
    result = run("recipe", "--list")
    assert result.returncode == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    assert listed == recipe_names()
    assert all(len(line.split()) > 3 for line in result.stdout.splitlines())


@pytest.mark.parametrize("name", recipe_names())
def test_recipe_help_prints_the_recipes_own_documentation_without_running_it(name):
    result = run("recipe", name, "--help")
    assert result.returncode == 0, result.stderr
    assert f"scripts/recipe {name}" in result.stdout or f"benchmarks/recipes/{name}" in result.stdout
    assert result.stderr == ""


def test_recipe_runs_from_the_repository_root_with_the_arguments_given(tmp_path):
    # a copy of the launcher in a tree of its own, with one recipe that reports what it was given
    launcher = tmp_path / "scripts" / "recipe"
    launcher.parent.mkdir()
    (tmp_path / "benchmarks" / "recipes").mkdir(parents=True)
    launcher.write_text((SCRIPTS / "recipe").read_text())
    (tmp_path / "benchmarks" / "recipes" / "echo.py").write_text(
        '"""Print the working folder, the path and the arguments."""\n'
        "import os, sys\nprint(os.getcwd())\nprint(os.environ['PYTHONPATH'].split(os.pathsep)[0])\n"
        "print(sys.argv[1:])\n"
        "sys.exit(3)\n")
    result = subprocess.run([sys.executable, str(launcher), "echo", "a", "--b"], capture_output=True, text=True,
                            cwd="/", timeout=60)
    assert result.returncode == 3
    assert result.stdout.splitlines() == [str(tmp_path), str(tmp_path), "['a', '--b']"]


def test_no_script_or_recipe_names_a_path_outside_the_repository():
    pattern = re.compile(r"\.\./shared|/work/|/home/|\.\./\.\./\.\.")
    for path in [*SCRIPTS.iterdir(), *RECIPES.iterdir(), ROOT / ".ci" / "run"]:
        if path.is_file():
            assert not pattern.search(path.read_text()), path


def _docs_screenshots():
    path = ROOT / "benchmarks" / "recipes" / "docs-screenshots.py"
    spec = importlib.util.spec_from_file_location("docs_screenshots", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_screenshots_tells_a_blank_page_from_a_page(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image, ImageDraw

    recipe = _docs_screenshots()
    blank, page = tmp_path / "blank.png", tmp_path / "page.png"
    Image.new("RGB", (640, 480), "white").save(blank)
    image = Image.new("RGB", (640, 480), "white")
    draw = ImageDraw.Draw(image)
    for row in range(20, 460, 24):
        draw.rectangle((40, row, 600, row + 10), fill="black")
    image.save(page)
    assert recipe.blank_fraction(str(blank)) == 1.0 and recipe.blank_fraction(str(page)) < 0.9


def test_docs_screenshots_tells_a_clipped_page_from_one_that_fits():
    recipe = _docs_screenshots()
    assert recipe.clipped('<html data-probe="1900x1280">') == (1900, 1280)
    assert recipe.clipped('<html lang="en" data-probe="1280x1280">') is None
    with pytest.raises(RuntimeError, match="did not report"):
        recipe.clipped("<html>")
