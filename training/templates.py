"""The offline template teacher's phrasings: several ways a user asks for each tool, with slots.

Slots: {object} and {new} (objects in / for the image), {scene} (a picture to generate), {style} (an edit),
{question} (about the image), {box} (an object's box), {region} (a named part of the image, whose box in
fractions of the size then fills {box}). A tool's text inputs take the slot named in ARG_SLOTS.
"""
from __future__ import annotations

ARG_SLOTS = {"object": "object", "new_object": "new", "question": "question", "coordinates": "box"}
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
           "bottom half": "[0, 0.5, 1, 1]", "centre": "[0.25, 0.25, 0.75, 0.75]"}
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
