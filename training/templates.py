"""The offline template teacher's phrasings: several ways a user asks for each tool, with slots.

Slots: {object} and {new} (objects in / for the image), {scene} (a picture to generate), {style} (an edit),
{question} (about the image), {box} (an object's box), {region} (a named part of the image, whose box in
fractions of the size then fills {box}), {x1} {y1} {x2} {y2} {w} {h} (a box in pixels, written out as corners or
as a corner with width and height; {box} is then that box) and {fbox} (a box in fractions; {box} is then that
box), {expression} with {a} {b} and {a_words} {b_words} (arithmetic; a phrasing's words such as "each" or "split"
decide the operation), {topic} (a title of the local encyclopedia). A tool's text inputs take the slot named in
ARG_SLOTS.
The phrasings are written the way people type: short, casual, lower case, without the tool's name.
"""
from __future__ import annotations

ARG_SLOTS = {"object": "object", "new_object": "new", "question": "question", "coordinates": "box",
             "expression": "expression", "query": "topic"}
TEXT_SLOT = {"InstructPix2Pix": "style"}  # the `text` input of other tools is a {scene}

_CONDITIONED = {  # ControlNet tools: what the condition map is called by users
    "CannyText2Image": ("canny edge map", "edges"), "LineText2Image": ("straight line map", "straight lines"),
    "HedText2Image": ("soft HED boundary map", "HED boundaries"), "ScribbleText2Image": ("sketch", "scribble"),
    "PoseText2Image": ("human pose", "pose skeleton"), "SegText2Image": ("segmentation map", "segmentations"),
    "DepthText2Image": ("depth map", "depth"), "NormalText2Image": ("normal map", "surface normals"),
}

PHRASINGS: dict[str, list[str]] = {
    "ImageCaptioning": ["What is in this photo?", "Describe the picture for me.",
                        "Can you tell me what this image shows?", "Give me a short caption for this picture.",
                        "What's going on in this image?",
                        "I can't see the image well; describe it, please."],
    "VisualQuestionAnswering": ["{question}", "Look at the picture and tell me: {question}",
                                "Answer a question about the image: {question}", "I'd like to know: {question}",
                                "Quick question about the photo. {question}"],
    "Image2Canny": ["Detect the edges of this image.", "Run canny edge detection on the picture.",
                    "Show me the outlines in this photo as an edge map.", "Can you find the edges of the {object}?",
                    "Extract a canny edge image from the picture.", "I need the edge map of this photo."],
    "Image2Line": ["Detect the straight lines in this image.", "Find all straight line segments in the picture.",
                   "Show me the straight lines of the {object} and its surroundings.",
                   "Perform straight line detection on this photo.", "Draw the line segments found in the image."],
    "Image2Scribble": ["Turn this photo into a scribble.", "Generate a sketch from this image.",
                       "Make a rough pencil sketch of the {object} picture.", "Detect the sketch of this image.",
                       "Give me a scribble drawing of the picture."],
    "Image2Pose": ["Detect the human pose in this image.", "Show me the body keypoints of the person.",
                   "Estimate the pose of the {object} in the photo.", "Generate a pose skeleton from this picture.",
                   "Where are the person's joints? Draw the pose."],
    "CropImage": ["Crop the {object} out of the image.", "Cut out the region {box} from the picture.",
                  "I only want the part with the {object}; crop it, please.", "Crop the image to the {object}.",
                  "Zoom in on the {object} by cropping the photo.", "Crop the {region} of this image.",
                  "Keep only the {region} of the picture.", "Cut the {region} out of the photo."],
    "TextDetection": ["Read the text in this image.", "Is there any writing in the picture? Read it.",
                      "Detect the text on the photo.", "What does the text in the image say?",
                      "Run OCR on this picture."],
    "FaceDetection": ["Find the faces in this photo.", "Detect every human face in the picture.",
                      "Are there any faces here? Mark them.", "Draw boxes around the faces in the image.",
                      "Locate the people's faces in this picture."],
    "SuperResolution": ["Upscale this image.", "Make the picture sharper and bigger.",
                        "Increase the resolution of this photo.", "Enhance the image to a higher resolution.",
                        "The photo is too small; super-resolve it."],
    "Text2Image": ["Generate an image of {scene}.", "Draw {scene} for me.", "Can you create a picture of {scene}?",
                   "Make an image showing {scene}.", "I want a new picture: {scene}.", "Paint {scene}."],
    "InstructPix2Pix": ["{style}", "Edit the photo: {style}", "Change the picture so that you {style_lower}",
                        "Restyle this image: {style}", "Please {style_lower}"],
    "Text2Box": ["Detect the {object} in the picture.", "Where is the {object}? Draw a box around it.",
                 "Find the {object} in this image.", "Locate the {object} for me.",
                 "Can you show me where the {object} is?"],
    "ObjectSegmenting": ["Segment the {object} in the image.", "Cut out the {object} with a mask.",
                         "Give me a segmentation mask of the {object}.", "Separate the {object} from the rest.",
                         "Highlight only the {object} by segmenting it."],
    "Segmenting": ["Segment everything in this image.", "Segment all the objects in the picture.",
                   "Perform segmentation on this photo.", "Split the image into its parts.",
                   "Generate segmentations for the whole picture."],
    "Image2Seg": ["Give me a semantic segmentation of this image.", "Label every region of the picture by class.",
                  "Run semantic segmentation on this photo.", "Make a segmentation map of the scene.",
                  "Which regions of the image are which? Segment it."],
    "Detection": ["Detect all the objects in this image.", "What objects are in the picture? Box them.",
                  "Find every object in the photo.", "Run object detection on this image.",
                  "Mark all the things you can detect in the picture."],
    "RemoveSomething": ["Remove the {object} from the photo.", "Erase the {object} from the picture.",
                        "Get rid of the {object} in this image.", "Make the {object} disappear.",
                        "Can you delete the {object} from the image?"],
    "ReplaceSomething": ["Replace the {object} with {new}.", "Swap the {object} for {new}.",
                         "Change the {object} in the picture into {new}.", "Put {new} where the {object} is.",
                         "Turn the {object} into {new}."],
    "Text2Shape": ["Generate a 3D model of {scene}.", "Make a 3D asset of {scene}.", "Create {scene} in 3D.",
                   "I need a 3D object: {scene}.", "Build a 3D shape of {scene}."],
    "Image2Depth": ["Predict the depth of this image.", "Estimate a depth map for the picture.",
                    "How far away is everything? Show me the depth.", "Generate the depth map of this photo.",
                    "Detect the depth of the {object} and its surroundings."],
    "Image2Normal": ["Predict the normal map of this image.", "Estimate surface normals for the picture.",
                     "Generate a normal map from this photo.", "Show me the normals of the {object} scene.",
                     "Compute the normal map of this image."],
    "Image2Hed": ["Detect the soft HED boundaries of this image.", "Run HED boundary detection on the picture.",
                  "Show me the soft edges of this photo.", "Give me the HED boundary map of the {object} picture.",
                  "Extract soft boundaries from the image."],
}
CASUAL: dict[str, list[str]] = {  # more ways people ask for the tools that run offline
    "Image2Canny": ["draw just the outlines of the things in the photo", "edge detection, please", "give me an outline "
                    "version of this photo", "where are the contours? draw them", "draw the borders between the "
                    "objects", "make a black and white edge map", "outline the shapes in this photo", "edges please",
                    "can you do edge detection on my photo?", "show me where the edges are",
                    "make an edge map out of this pic", "find the object boundaries in the image",
                    "run canny on it", "get me the outlines of this picture", "i need an edge image of this",
                    "highlight the edges in the photo", "could you extract the contours of the image?"],
    "Image2Line": ["find the straight edges like walls and poles", "mark only the ruler-straight lines", "detect "
                   "straight segments, not every edge", "show the line segments of the buildings", "straight lines "
                   "only please", "which lines in the photo are straight? draw them",
                   "highlight the straight lines in this photo", "detect the line segments", "where are the straight "
                   "lines?", "pick out the straight lines in this scene", "line detection on this pic please",
                   "show me only the straight lines, not the curves", "i want the straight line segments of the photo",
                   "find lines in this image", "can you mark the straight lines of the picture?"],
    "Image2Scribble": ["turn it into a doodle", "make this look hand drawn", "convert the photo to a pencil "
                       "drawing", "give me a sketch version of the picture", "scribble this photo",
                       "draw this as a sketch", "make a scribble out of my photo", "sketchify this image",
                       "can you turn the picture into a hand-drawn sketch?", "i want a pencil sketch version",
                       "create a drawing of this photo", "make it look sketched", "sketch it for me"],
    "Image2Pose": ["draw the stick figure of the person", "estimate the body pose", "what pose is the person in? "
                   "show it", "detect the human skeleton", "find the person's pose", "show me how the person is posed",
                   "get the body skeleton of this person",
                   "mark the joints of the person", "detect keypoints of the human body",
                   "what's the posture of the person? draw it", "pose estimation please",
                   "show the skeleton of whoever is in the picture"],
    "TextDetection": ["read the label for me", "what does the sign say?", "ocr please", "copy out the words "
                      "you see in the image", "what's written here?", "read the sign in this photo",
                      "extract the text from the picture",
                      "any text in this image?", "tell me the words in the picture", "recognize the text in my photo",
                      "can you read this for me?", "what do the letters in the image say?", "text detection please"],
    "FaceDetection": ["who's in the picture? box their faces", "find every face", "outline the faces of the "
                      "people", "are there people's faces in this photo?", "find faces",
                      "detect the face in this picture", "how many people's faces can you find?",
                      "box the faces", "mark any faces in the photo", "face detection please",
                      "is there a face in this picture? show me", "can you spot the faces here?"],
    "SuperResolution": ["enlarge this photo", "can you make the picture larger?", "i want a higher resolution "
                        "version", "upscale it 2x please", "it's pixelated, can you make it bigger and sharper?",
                        "make "
                        "the image bigger without losing quality", "super resolution please", "double the size of "
                        "this photo", "enhance this low quality image", "increase the pixels of this image",
                        "make it bigger", "increase the image size", "upscale my photo", "this is low-res, fix it",
                        "can you improve the quality and size?", "sharpen and enlarge this picture",
                        "make a high resolution copy of this image", "blow this picture up to a larger size",
                        "the photo is too blurry and small, can you make it better?", "i need it at 2x resolution"],
    "CropImage": ["crop x {x1}-{x2}, y {y1}-{y2}", "cut out x from {x1} to {x2} and y from {y1} to {y2}",
                  "crop a {w}x{h} box starting at ({x1}, {y1})", "crop {w} by {h} pixels from the point {x1},{y1}",
                  "top-left corner ({x1}, {y1}), bottom-right corner ({x2}, {y2}): crop that",
                  "crop from pixel {x1},{y1} to pixel {x2},{y2}", "crop: left={x1} top={y1} right={x2} bottom={y2}",
                  "please crop the image to {x1},{y1},{x2},{y2}", "crop {x1} {y1} {x2} {y2}",
                  "crop the rectangle starting at x={x1}, y={y1}, {w} wide and {h} tall",
                  "i want the area between x {x1} and {x2}, y {y1} and {y2}",
                  "crop out the {region} for me", "zoom into the {region}", "trim it to the {region}", "crop to {box}",
                  "crop the area {box} please", "cut out {box} from the photo",
                  "crop from ({x1}, {y1}) to ({x2}, {y2})", "crop the rectangle {x1},{y1} - {x2},{y2}",
                  "cut the picture to x {x1} to {x2}, y {y1} to {y2}",
                  "crop it: left {x1}, top {y1}, right {x2}, bottom {y2}", "keep only pixels {x1} {y1} {x2} {y2}",
                  "crop with the box ({x1}, {y1}, {x2}, {y2})", "crop the fractions {fbox}",
                  "crop to {fbox} of the image (fractions)", "crop the part {fbox}, in fractions of the size",
                  "crop the {region}", "only keep the {region} please", "can you cut away everything but the {region}?",
                  "crop it to the {region}", "just the {region} of the photo"],
    "Calculator": ["what's {a_words} times {b_words}?", "{a_words} plus {b_words} is what?",
                   "what is {a_words} minus {b_words}", "i bought {b} things at ${a} each, what's the total?",
                   "tickets cost {a} dollars each and we need {b}, how much is that?",
                   "we split a bill of ${a} between {b} people, how much does each pay?",
                   "i had {a} euros and spent {b}, how much is left?", "add {a} and {b}",
                   "multiply {a} by {b}", "hey can you do {expression} real quick", "what is {expression}?",
                   "calculate {expression}", "{expression} = ?", "how much is {expression}",
                   "what's {a} plus {b}", "can you work out {a} times {b}?", "what do i get if i divide {a} by {b}",
                   "{a} minus {b}?", "compute {expression} for me", "quick math: {expression}"],
    "Calendar": ["what's the date", "hey what day is it today?", "remind me what today's date is",
                 "which day of the week are we on?", "is it the weekend yet?", "what month are we in?",
                 "what's the date today, i lost track", "tell me today's day and date", "what's today's date?",
                 "what day is it", "tell me the date", "which weekday is today?",
                 "do you know what day of the week it is?", "what is the date today", "is today a weekday?",
                 "today's date please"],
    "WikiSearch": ["tell me about {topic}", "what do you know about {topic}?", "search the encyclopedia for {topic}",
                   "give me some facts about {topic}", "look up {topic}", "i'd like to learn about {topic}",
                   "find information on {topic}", "what is {topic}?"],
}
for _cls, _extra in CASUAL.items():
    PHRASINGS[_cls] = PHRASINGS.get(_cls, []) + _extra
for _cls, (_map, _short) in _CONDITIONED.items():
    PHRASINGS[_cls] = [
        f"Use the {_map} of this image to generate {{scene}}.",
        f"Keep the {_short} of this picture but make it {{scene}}.",
        f"Generate a new real image of {{scene}} from the {_map} of the photo.",
        f"From this image's {_short}, create {{scene}}.",
        f"Make {{scene}} that follows the {_map} of this picture.",
    ]

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
FOLLOWUPS = [("What was my last request?", "You asked: {request}."), ("thanks, great job", "You're welcome!"),
             ("Can you remind me of the result?", "{answer}"), ("where is the output you just made?", "{answer}"),
             ("that's what I wanted, thank you", "Glad it helped!"),
             ("what did you just do?", "You asked: {request}. {answer}"),
             ("awesome", "Happy to help! Anything else?"), ("repeat the answer please", "{answer}")]
