"""`expressivity reproduce`: refusals before any claim starts."""

from click.testing import CliRunner

from expressivity.cli.main import cli


def test_list_refuses_options_it_would_ignore():
    res = CliRunner().invoke(cli, ["reproduce", "--list", "--quick"])
    assert res.exit_code == 2 and "--quick" in res.stderr and res.stdout == ""


def test_an_unwritable_out_is_refused_before_the_criterion_is_printed():
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-2", "--out", "/proc/expressivity-claim"])
    assert res.exit_code == 2 and res.stdout == "" and "cannot write" in res.stderr


def test_out_never_replaces_another_commands_folder(tmp_path):
    runner = CliRunner()
    circuit_dir, train_dir = tmp_path / "c", tmp_path / "t"
    assert runner.invoke(cli, ["circuit", "shift", "--out", str(circuit_dir)]).exit_code == 0
    assert runner.invoke(cli, ["train", "--task", "reverse", "--length", "4", "--d-model", "8", "--steps", "2",
                               "--out", str(train_dir)]).exit_code == 0
    for args in (["circuit", "shift", "--out", str(train_dir)], ["wang-e", "build", "--memory", "fixed", "--out",
                 str(circuit_dir)], ["reproduce", "wang-e-2", "--out", str(circuit_dir)],
                 ["export", str(circuit_dir), "--to", "network", "--out", str(circuit_dir)]):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2 and res.stderr.startswith("error:"), (args, res.output)
    assert (train_dir / "seed_0" / "checkpoint").exists() and (circuit_dir / "network").exists()
    # the same command may replace its own folder
    assert runner.invoke(cli, ["circuit", "shift", "--length", "5", "--out", str(circuit_dir)]).exit_code == 0


def test_retry_failed_is_a_sweep_option_a_numerics_claim_refuses(tmp_path):
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-2", "--retry-failed", "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "--retry-failed" in res.stderr and not (tmp_path / "c").exists()


def test_plan_prints_runs_packs_memory_and_time_and_writes_nothing(tmp_path):
    out = tmp_path / "w4"
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-4", "--plan", "--workers", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for needle in ("plan: 150 runs (0 recorded before), 12 packs to train", "on cpu (precision fp32",
                   "memory: largest pack about", "timed here: a pack of", "estimated time:"):
        assert needle in res.stdout
    assert not out.exists()
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-4", "--plan", "--json", "--workers", "1", "--out", str(out)])
    import json

    plan = json.loads(res.stdout)["plan"]
    assert res.exit_code == 0 and plan["runs"] == 150 and plan["seconds"] > 0 and plan["execution"]["device"] == "cpu"
    assert not out.exists()


def test_plan_of_a_numerics_claim_says_it_trains_nothing(tmp_path):
    out = tmp_path / "w8"
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-8", "--plan", "--out", str(out)])
    assert res.exit_code == 0 and "wang-e-8 trains nothing" in res.stdout and not out.exists()
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-8", "--plan", "--json", "--out", str(out)])
    import json

    answer = json.loads(res.stdout)
    assert res.exit_code == 0 and answer["plan"] is None and "trains nothing" in answer["note"] and not out.exists()


def test_a_run_estimated_above_an_hour_needs_yes(tmp_path, monkeypatch):
    from expressivity.experiments import plan

    def slow(name, scale, out, **kwargs):
        return plan.Plan(name, scale, "cpu", {"device": "cpu"}, 1, 1, "1 GiB", runs=3, seconds=5 * 3600)

    monkeypatch.setattr(plan, "plan_claim", slow)
    out = tmp_path / "w7"
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-7", "--out", str(out)])
    assert res.exit_code == 2 and "estimated at 5 hours on this machine; pass --yes" in res.stderr
    assert not out.exists()


def test_the_default_scale_is_quick_and_the_device_auto():
    res = CliRunner().invoke(cli, ["reproduce", "--help"])
    assert "[default: quick]" in res.stdout and "[default: auto]" in res.stdout


def test_a_numerics_claim_refuses_how_runs_train(tmp_path):
    for option in (["--precision", "bf16"], ["--memory-budget", "1GiB"], ["--capture", "eager"]):
        res = CliRunner().invoke(cli, ["reproduce", "wang-e-2", *option, "--out", str(tmp_path / "c")])
        assert res.exit_code == 2 and option[0] in res.stderr and not (tmp_path / "c").exists()


def test_a_bad_memory_budget_is_refused_before_anything_starts(tmp_path):
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-4", "--memory-budget", "lots", "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "not a size" in res.stderr and not (tmp_path / "c").exists()


def test_list_shows_every_scales_estimate_not_only_json():
    # before: the listing printed name, tag, title and source; the estimates were in --json alone
    import json

    claims = json.loads(CliRunner().invoke(cli, ["reproduce", "--list", "--json"]).stdout)["claims"]
    text = " ".join(CliRunner().invoke(cli, ["reproduce", "--list"]).stdout.split())
    for claim in claims:
        for scale in ("quick", "medium", "full"):
            if claim[scale]:
                assert f"{scale}: {' '.join(claim[scale].split())}" in text, (claim["name"], scale)
