"""Template text and label-mask boundaries (the methods page, "One gradient per sample")."""

import pytest
from conftest import char_tokenizer

from analysis.extract import prompts

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def test_base_template_joins_instruction_and_output_with_newline():
    tokenizer = char_tokenizer()
    prompt = prompts.prompt_text(tokenizer, "What is 2+2?", "base")
    assert prompt == "What is 2+2?\n"
    encoded = prompts.encode(tokenizer, prompt, "4", max_length=1024)
    # <bos> + 13 prompt characters, then the response character
    assert encoded.prompt_length == 1 + len(prompt)
    assert encoded.input_ids[encoded.prompt_length :] == tokenizer("4", add_special_tokens=False)["input_ids"]
    assert encoded.n_response_tokens == 1


def test_instruct_template_has_system_message_and_generation_prompt():
    tokenizer = char_tokenizer()
    prompt = prompts.prompt_text(tokenizer, "Hi", "instruct")
    assert prompt == f"<|system|>{prompts.SYSTEM_MESSAGE}<|end|><|user|>Hi<|end|><|assistant|>"
    encoded = prompts.encode(tokenizer, prompt, "Yes.", max_length=1024)
    assert len(encoded.input_ids) - encoded.prompt_length == 4


def test_gemma_style_template_gets_no_system_message():
    tokenizer = char_tokenizer(GEMMA_TEMPLATE)
    prompt = prompts.prompt_text(tokenizer, "Hi", "instruct", system_message=False)
    assert prompt == "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
    assert "helpful assistant" not in prompt


def test_input_field_joins_instruction():
    assert prompts.instruction_text("Q", "") == "Q"
    assert prompts.instruction_text("Q", "context") == "Q\ncontext"


def test_literal_backslash_n_is_kept_as_text():
    tokenizer = char_tokenizer()
    prompt = prompts.prompt_text(tokenizer, "a\\nb", "base")
    assert prompt == "a\\nb\n"


def test_truncation_and_fully_truncated_response():
    tokenizer = char_tokenizer()
    prompt = prompts.prompt_text(tokenizer, "x" * 20, "base")
    encoded = prompts.encode(tokenizer, prompt, "y" * 50, max_length=30)
    assert len(encoded.input_ids) == 30
    assert encoded.n_response_tokens == 30 - encoded.prompt_length
    gone = prompts.encode(tokenizer, prompt, "y" * 50, max_length=10)
    assert gone.n_response_tokens == 0


def test_response_token_limit_cuts_to_exact_count():
    tokenizer = char_tokenizer()
    prompt = prompts.prompt_text(tokenizer, "q", "base")
    for limit in (1, 7, 30):
        assert prompts.encode(tokenizer, prompt, "z" * 40, 1024, response_token_limit=limit).n_response_tokens == limit


def test_instruct_without_chat_template_is_a_clear_error():
    with pytest.raises(prompts.TemplateError, match="chat template"):
        prompts.prompt_text(char_tokenizer(chat_template=None), "Hi", "instruct")


def test_the_answer_span_is_the_tokens_that_overlap_the_answer():
    tokenizer = char_tokenizer()
    prompt, response = "Q: 2 or 12?\n", "It is 12, as 12 > 2.\nThe final answer is 12"
    encoded = prompts.encode_answer(tokenizer, prompt, response, answer_start=len(response) - 2, max_length=200)
    # one token per character after the bos token: exactly the last two characters are scored
    assert encoded.prompt_length == len(encoded.input_ids) - 2 and encoded.n_response_tokens == 2
    assert tokenizer.convert_ids_to_tokens(encoded.input_ids[encoded.prompt_length :]) == ["1", "2"]


class _MergedSpaceTokenizer:
    """A fast tokenizer's interface over words that carry their leading space ("▁yes"), as
    SentencePiece tokenizers such as Gemma 3's do: no token boundary lies at the answer."""

    is_fast = True

    def __call__(self, text, return_offsets_mapping=False):
        import re

        spans = [(0, 0)] + [m.span() for m in re.finditer(r" ?\S+|\n", text)]
        return {"input_ids": list(range(len(spans))), "offset_mapping": spans}


def test_a_token_that_carries_the_answer_with_the_space_before_it_is_scored():
    prompt, response = "Is it? ", "Yes.\nThe final answer is yes"
    encoded = prompts.encode_answer(
        _MergedSpaceTokenizer(), prompt, response, answer_start=len(response) - 3, max_length=50
    )
    # counting the prefix's tokens would put the answer's start after " yes" and score nothing
    assert encoded.n_response_tokens == 1 and encoded.prompt_length == len(encoded.input_ids) - 1


def test_a_text_cut_before_its_answer_scores_nothing():
    tokenizer = char_tokenizer()
    prompt, response = "Q?\n", "x" * 50 + "\nThe final answer is 7"
    encoded = prompts.encode_answer(tokenizer, prompt, response, answer_start=len(response) - 1, max_length=40)
    assert encoded.n_response_tokens == 0 and len(encoded.input_ids) == 40


def test_the_answer_span_needs_a_fast_tokenizer():
    class Slow:
        is_fast = False

    with pytest.raises(prompts.TemplateError, match="fast tokenizer"):
        prompts.encode_answer(Slow(), "p", "r", answer_start=0, max_length=10)
