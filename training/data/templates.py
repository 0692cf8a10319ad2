"""The offline template teacher's vocabulary: what fills the slots of the tools' `phrasings` (visual_tools).

Slots: {object} and {new} (objects in / for the image), {scene} (a picture to generate), {style} (an edit),
{question} (about the image), {box} (an object's box), {region} (a named part of the image, whose box in
fractions of the size then fills {box}), {x1} {y1} {x2} {y2} {w} {h} (a box in pixels, written out as corners or
as a corner with width and height; {box} is then that box) and {fbox} (a box in fractions; {box} is then that
box), {expression} with {a} {b} and {a_words} {b_words} (arithmetic; a phrasing's words such as "each" or "split"
decide the operation), {topic} (a title of the local encyclopedia). A tool's text inputs take the slot its
`arg_slots` names, else the one ARG_SLOTS names for the input, else {scene}.
"""
from __future__ import annotations

ARG_SLOTS = {"object": "object", "new_object": "new", "question": "question", "coordinates": "box",
             "expression": "expression", "query": "topic"}

REGIONS = {"top left quarter": "[0, 0, 0.5, 0.5]", "top right quarter": "[0.5, 0, 1, 0.5]",
           "bottom left quarter": "[0, 0.5, 0.5, 1]", "bottom right quarter": "[0.5, 0.5, 1, 1]",
           "left half": "[0, 0, 0.5, 1]", "right half": "[0.5, 0, 1, 1]", "top half": "[0, 0, 1, 0.5]",
           "bottom half": "[0, 0.5, 1, 1]", "centre": "[0.25, 0.25, 0.75, 0.75]",
           "upper left corner": "[0, 0, 0.5, 0.5]", "upper right part": "[0.5, 0, 1, 0.5]",
           "lower left corner": "[0, 0.5, 0.5, 1]", "lower right part": "[0.5, 0.5, 1, 1]",
           "left side": "[0, 0, 0.5, 1]", "right side": "[0.5, 0, 1, 1]", "upper half": "[0, 0, 1, 0.5]",
           "lower half": "[0, 0.5, 1, 1]", "center": "[0.25, 0.25, 0.75, 0.75]",
           "middle": "[0.25, 0.25, 0.75, 0.75]", "top third": "[0, 0, 1, 0.33]", "bottom third": "[0, 0.67, 1, 1]"}
FRACTIONS = (0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1)
ARITHMETIC = ("+", "-", "*", "/")
OPERATION_WORDS = {"divide": "/", "split": "/", "minus": "-", "left": "-", "times": "*", "each": "*",
                   "multiply": "*", "plus": "+", "add": "+"}  # the first of these words in a phrasing decides
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
TOPICS_HELD_OUT = ("Eiffel Tower", "Marie Curie", "Amazon River", "Grace Hopper")  # the hand-written cases' topics
SCENES = ["a red sports car on a mountain road", "a lighthouse at sunset", "a bowl of ramen with chopsticks",
          "a snowy cabin in a pine forest", "an astronaut riding a horse", "a futuristic city at night",
          "a golden retriever playing in the park", "a vase of sunflowers on a table", "a sailing boat in a storm",
          "a watercolor painting of Paris", "a dragon flying over a castle", "a cozy library with a fireplace",
          "a robot making coffee", "a tropical beach with palm trees", "an old man reading a newspaper",
          "a teapot shaped like a cat", "a medieval knight in shining armor", "a field of tulips in spring",
          "a bicycle leaning against a brick wall", "a hot air balloon over the desert",
          "a samurai under cherry blossoms", "an underwater coral reef", "a steam train crossing a bridge",
          "a bowl of fresh fruit", "a cartoon penguin wearing sunglasses", "a mountain lake at dawn"]
STYLES = ["Make it look like a Van Gogh painting.", "Turn it into a pencil drawing.", "Make it snow.",
          "Make it look like it is night.", "Turn it into a cartoon.", "Make it look like an oil painting.",
          "Add fireworks in the sky.", "Make it autumn.", "Make it look like a robot.", "Turn it into pixel art.",
          "Make it look like a watercolor.", "Make the colors more vivid.", "Make it look like an old photograph.",
          "Turn it into a marble statue.", "Make it look underwater.", "Set it on fire."]
NEW_OBJECTS = ["a teddy bear", "a golden crown", "a bunch of flowers", "a robot", "a pineapple", "a dog",
               "a red balloon", "a glass of orange juice", "a stack of books", "a pumpkin", "a toy rocket"]
QUESTIONS = ["What color is the {object}?", "Where is the {object} in the picture?",
             "Is there a {object} in the image?",
             "What is the {object} doing?", "What is behind the {object}?", "How big is the {object}?",
             "What is the background color of the image?", "Is it day or night in this picture?",
             "How many people are in the image?", "What material is the {object} made of?"]
IMAGE_ANSWERS = ["Here is the result: {name}.", "I have finished it; the new image is {name}.",
                 "Done. You can find the result in {name}.", "The output image is {name}."]
CHAIN_JOINS = ["{first}, then {then}", "{first} and then {then}", "first {first}, after that {then}",
               "{first}. Then {then}", "{first}, and afterwards {then}", "{first}; next, {then}",
               "{first} and after that {then}", "two things: {first}, then {then}", "{first}, then on the result "
               "{then}", "{first}. once that's done, {then}", "{first} -> {then}", "can you {first} and then {then}?"]
# a follow-up's answer is never the earlier answer word for word: copying it must never be what is rewarded
FOLLOWUPS = [("What was my last request?", "You asked: {request}."), ("thanks, great job", "You're welcome!"),
             ("Can you remind me of the result?", "I used {tools}; the result is above."),
             ("where is the output you just made?", "It is {files}."),
             ("that's what I wanted, thank you", "Glad it helped!"),
             ("what did you just do?", "You asked: {request}, so I used {tools}."),
             ("awesome", "Happy to help! Anything else?")]
