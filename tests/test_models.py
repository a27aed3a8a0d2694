"""Model resolution: local folders (the hub code path), templates, devices and refusals."""

import pytest
import torch

from analysis import models


def test_local_folder_loads_frozen_float32(tiny_model_dir):
    loaded = models.load(str(tiny_model_dir("llama")), template="base", device="cpu")
    assert loaded.n_layers == 4 and loaded.template == "base" and loaded.system_message
    assert all(p.dtype == torch.float32 and not p.requires_grad for p in loaded.model.parameters())
    assert not loaded.model.training


def test_gemma_family_gets_no_system_message(tiny_model_dir):
    loaded = models.load(str(tiny_model_dir("gemma3")), template="instruct", device="cpu")
    assert not loaded.system_message


def test_unknown_model_without_template_is_refused():
    with pytest.raises(models.ModelError, match="--template"):
        models.resolve_template("someone/some-model", None)


def test_registry_knows_offline_and_paper_models():
    assert models.resolve_template("gemma-3-270m", None) == "base"
    assert models.resolve_template("smollm2-135m-instruct", None) == "instruct"
    assert models.resolve_template("google/gemma-2-9b-it", None) == "instruct"
    assert len(models.PAPER_MODELS) == 10


def test_instruct_template_needs_a_chat_template(tiny_model_dir):
    with pytest.raises(models.ModelError, match="no chat template"):
        models.load(str(tiny_model_dir("llama", chat_template=None)), template="instruct", device="cpu")


def test_folder_without_weights_is_refused(tmp_path, tiny_model_dir):
    (tmp_path / "config.json").write_text((tiny_model_dir("llama") / "config.json").read_text())
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(models.ModelError, match="no safetensors weights"):
        models.load(str(tmp_path), template="base", device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given where no CUDA device exists")
def test_cuda_where_none_exists_is_a_clear_error():
    with pytest.raises(models.ModelError, match="no CUDA device"):
        models.pick_device("cuda")


def test_model_slug_is_file_system_safe():
    assert models.model_slug("meta-llama/Llama-3.1-8B") == "meta-llama--Llama-3.1-8B"
