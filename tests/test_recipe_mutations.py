"""The recipes' own checks catch plausible one-line mistakes (mutation testing).

recipes/mutation_score.py lists, per recipe, exact (old line -> new line) edits: a wrong accumulation divisor, a
missing reducer, sum instead of mean, a reversed comparison, a missing range check, a BatchNorm momentum copied
from PyTorch, no gradients_mean, clipping before the all-reduce, a swapped EMA decay, a frozen layer left
trainable, ... Each is applied to a copy of the recipe, which then runs with course_lib blocked; the recipe's own
check must fail. Every listed mutation must still apply (its old line found exactly once), so the list cannot rot
when a recipe changes. The score table is printed at the end and written to outputs/recipes/mutation_score.md.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "recipes"))  # mutation_score imports run_all from its own folder
_spec = importlib.util.spec_from_file_location("recipes_mutation_score", ROOT / "recipes" / "mutation_score.py")
mutation_score = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation_score)
sys.path.remove(str(ROOT / "recipes"))
run_all = mutation_score.run_all

MUTATIONS = mutation_score.all_mutations()


def test_every_recipe_has_mutations_and_every_mutation_applies():
    recipes = {p.name for p in run_all.recipe_paths()}
    assert set(mutation_score.MUTATIONS) == recipes, sorted(recipes ^ set(mutation_score.MUTATIONS))
    assert len(MUTATIONS) >= 30
    for recipe, description, old, new in MUTATIONS:
        source = (run_all.RECIPES_DIR / recipe).read_text(encoding="utf-8")
        mutated = mutation_score.apply_mutation(source, old, new)
        assert mutated != source and mutated.count("\n") == source.count("\n"), (recipe, description)
        compile(mutated, recipe, "exec")  # still Python: the recipe's check, not a SyntaxError, must stop it


def test_apply_mutation_needs_exactly_one_match():
    source = "a = 1\n    b = 2\na = 1\n"
    assert mutation_score.apply_mutation(source, "    b = 2", "    b = 3") == "a = 1\n    b = 3\na = 1\n"
    for old in ("a = 1", "b = 2", "c = 3"):  # twice; not the whole line (indentation counts); absent
        with pytest.raises(ValueError, match="Fix: update recipes/mutation_score.py"):
            mutation_score.apply_mutation(source, old, "x = 0")


def test_verdict_tells_a_caught_mistake_from_a_crash():
    assert mutation_score.verdict(0, "all good", "") == "missed"
    assert mutation_score.verdict(1, "", "SystemExit: CHECK FAILED: loss differs") == "caught"
    assert mutation_score.verdict(1, "", "Traceback ...\nAssertionError: \nNot equal to tolerance") == "caught"
    assert mutation_score.verdict(1, "", "Traceback ...\nKeyError: 'x -> y: no such parameter. Fix: ...'") == "caught"
    assert mutation_score.verdict(1, "", "Traceback ...\nNameError: name 'k' is not defined") == "crashed"
    assert mutation_score.verdict(1, "", '  File "x.py", line 3\nSyntaxError: invalid syntax') == "crashed"
    assert mutation_score.verdict(-1, "", "\nTIMEOUT: killed after 300 s") == "crashed"


@pytest.mark.slow
def test_every_listed_mutation_is_caught(request):
    results = mutation_score.run_all_mutations(MUTATIONS, workers=2)
    table = mutation_score.score_table(results)
    out = ROOT / "outputs" / "recipes"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation_score.md").write_text(table + "\n", encoding="utf-8")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("\nRecipe mutation score (recipes/mutation_score.py):\n" + table)
    not_caught = [(r, d, o, tail) for r, d, o, _, tail in results if o != "caught"]
    assert not not_caught, "\n\n".join(f"{o}: {r}: {d}\n{tail}" for r, d, o, tail in not_caught)
