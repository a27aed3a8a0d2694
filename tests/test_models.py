"""Model resolution: local folders (the hub code path), templates, devices and refusals."""

import pytest
import torch

from analysis.core import registry
from analysis.extract import models


def test_local_folder_loads_frozen_float32(tiny_model_dir):
    loaded = models.load(str(tiny_model_dir("llama")), template="base", device="cpu")
    assert loaded.n_layers == 4 and loaded.template == "base" and loaded.system_message
    assert all(p.dtype == torch.float32 and not p.requires_grad for p in loaded.model.parameters())
    assert not loaded.model.training


def test_gemma_family_gets_no_system_message(tiny_model_dir):
    loaded = models.load(str(tiny_model_dir("gemma3")), template="instruct", device="cpu")
    assert not loaded.system_message


def test_unknown_model_without_template_is_refused():
    with pytest.raises(registry.ModelError, match="--template"):
        registry.resolve_template("someone/some-model", None)


def test_registry_knows_offline_and_paper_models():
    assert registry.resolve_template("gemma-3-270m", None) == "base"
    assert registry.resolve_template("smollm2-135m-instruct", None) == "instruct"
    assert registry.resolve_template("google/gemma-2-9b-it", None) == "instruct"
    assert len(registry.PAPER_MODELS) == 10


def test_instruct_template_needs_a_chat_template(tiny_model_dir):
    with pytest.raises(registry.ModelError, match="no chat template"):
        models.load(str(tiny_model_dir("llama", chat_template=None)), template="instruct", device="cpu")


def test_folder_without_weights_is_refused(tmp_path, tiny_model_dir):
    (tmp_path / "config.json").write_text((tiny_model_dir("llama") / "config.json").read_text())
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(registry.ModelError, match="no safetensors weights"):
        models.load(str(tmp_path), template="base", device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given where no CUDA device exists")
def test_cuda_where_none_exists_is_a_clear_error():
    with pytest.raises(registry.ModelError, match="no CUDA device"):
        models.pick_device("cuda")


def test_model_slug_is_file_system_safe():
    assert registry.model_slug("meta-llama/Llama-3.1-8B") == "meta-llama--Llama-3.1-8B"


def test_every_paper_model_is_pinned_to_a_commit():
    for name, info in registry.PAPER_MODELS.items():
        assert info.revision is not None and len(info.revision) == 40, name
        int(info.revision, 16)
    assert models.resolve_revision("google/gemma-2-2b", None) == registry.PAPER_MODELS["google/gemma-2-2b"].revision
    assert models.resolve_revision("google/gemma-2-2b", "main") == "main"
    assert models.resolve_revision("someone/unpinned", None) is None


def _hub_response(code: int):
    import httpx2

    return httpx2.Response(code, request=httpx2.Request("GET", "https://huggingface.co/m/resolve/x/config.json"))


def _hub_fails_with(monkeypatch, tmp_path, error: BaseException) -> None:
    """Every download from the hub raises ``error`` (what transformers then makes of it is real)."""
    import huggingface_hub
    import transformers.utils.hub as hub

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(hub, "hf_hub_download", fail)
    monkeypatch.setattr(hub, "snapshot_download", fail)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))


def test_gated_model_without_login_is_one_clear_line(monkeypatch, tmp_path):
    from huggingface_hub.errors import GatedRepoError

    _hub_fails_with(monkeypatch, tmp_path, GatedRepoError("401 Client Error", response=_hub_response(401)))
    with pytest.raises(registry.ModelError, match="gated repository.*log in") as caught:
        models.load("meta-llama/Llama-3.1-8B", device="cpu")
    assert "\n" not in str(caught.value)


def test_missing_revision_is_one_clear_line(monkeypatch, tmp_path):
    from huggingface_hub.errors import RevisionNotFoundError

    _hub_fails_with(monkeypatch, tmp_path, RevisionNotFoundError("404 Client Error", response=_hub_response(404)))
    with pytest.raises(registry.ModelError, match="revision 'no-such-branch' does not exist") as caught:
        models.load("Qwen/Qwen2-1.5B", device="cpu", revision="no-such-branch")
    assert "\n" not in str(caught.value)


def test_no_disk_space_is_one_clear_line(monkeypatch, tmp_path):
    import errno

    _hub_fails_with(monkeypatch, tmp_path, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(registry.ModelError, match="no space left.*HF_HOME") as caught:
        models.load("google/gemma-2-9b", device="cpu")
    assert "\n" not in str(caught.value)


def test_the_pinned_revision_reaches_config_model_and_tokenizer(monkeypatch):
    import transformers

    seen = []

    def record(source, **kwargs):
        seen.append(kwargs.get("revision"))
        raise OSError("stop here")

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", record)
    with pytest.raises(registry.ModelError, match="stop here"):
        models.load("google/gemma-2-9b-it", device="cpu")
    assert seen == [registry.PAPER_MODELS["google/gemma-2-9b-it"].revision]
    monkeypatch.setattr(models, "_load_pretrained", lambda source, revision, *rest: seen.append(revision) or 1 / 0)
    with pytest.raises(ZeroDivisionError):  # an error that is not about files is not disguised
        models.load("google/gemma-2-9b-it", device="cpu", revision="abc123")
    assert seen[-1] == "abc123"


def test_revision_applies_to_hub_models_only(tiny_model_dir):
    with pytest.raises(registry.ModelError, match="hub models only"):
        models.load(str(tiny_model_dir("llama")), template="base", device="cpu", revision="main")


def test_loaded_commit_is_read_from_the_hub_cache(monkeypatch, tmp_path):
    import huggingface_hub

    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--name"
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert models.hub_commit("org/name", None) == sha
    assert models.hub_commit("org/name", sha) == sha
    assert models.hub_commit("org/other", "v1") == "v1"


def test_facts_of_a_local_folder(tiny_model_dir):
    folder = tiny_model_dir("llama", chat_template=None)
    loaded = models.load(str(folder), template="base", device="cpu")
    facts = loaded.facts()
    assert facts.chat_template_sha256 is None
    assert facts.attention == "sdpa" and facts.revision == f"local folder {folder.resolve()}"
    assert models.describe(str(folder)) == facts


def test_command_line_revision_reaches_the_loader(tiny_model_dir, tmp_path, capsys, monkeypatch):
    from analysis import cli

    data = tmp_path / "d.json"
    data.write_text('[{"instruction": "q", "input": "", "output": "a"}]')
    argv = [
        "extract",
        "--model",
        str(tiny_model_dir("llama")),
        "--template",
        "base",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "r"),
        "--revision",
        "main",
        "--no-progress",
    ]
    assert cli.main(argv) == 2
    assert "hub models only" in capsys.readouterr().err
    assert cli.main(argv + ["--executor", "ray"]) == 2
    assert "--revision is not available with --executor ray" in capsys.readouterr().err
    seen = {}

    def fake_load(name, template, device, trust_remote_code, revision=None):
        seen["revision"] = revision
        raise registry.ModelError("stop")

    monkeypatch.setattr(models, "load", fake_load)
    assert (
        cli.main(
            [
                "extract",
                "--model",
                "Qwen/Qwen2-1.5B",
                "--data",
                str(data),
                "--out",
                str(tmp_path / "r"),
                "--revision",
                "0123abc",
            ]
        )
        == 2
    )
    assert seen == {"revision": "0123abc"}
