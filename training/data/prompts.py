"""Prompts of the data pipeline, worded as in GPT4Tools' repository."""

PROMPT_VERSION = "gpt4tools-v1"
# GPT4Tools' scripts/get_instruction.py, with the tool list and count filled in from the registry
GENERATION_PROMPT = """Given an image whose image_path is "example.jpg". Image caption: "{caption}".
The image caption includes detail image description and each object paired with the bounding box [x1, y1, x2, y2]. For the bounding box, (x1, y1) refers to the top left, and (x2, y2) refers to the bottom right. x1 less than x2, and y1 less than y2.

Below are {count} visual tools. Each tool is defined as "tool_name: usage scenario, and arguments_to_tool".

Please generate {n} visual instructions, spread evenly over the tools.
The generated instructions should follow the format of "instruction_content, [tool_name, arguments_to_tool]". Each instruction must relate to the caption and can be solved by the tool.
You can not revise the "tool_name", or add any other fake tools that is not defined. You must keep the correct "arguments_to_tool".

Tools:
{tools}

Note that your generated visual instructions should be related to the image caption extremely. Please generate complex and deceptive instructions as much as possible.
Directly reply to me with the list."""
