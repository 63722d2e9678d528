#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Train an image classifier on a folder of class folders (JPEG/PNG).

Keras' "load and preprocess images" tutorial on vtpu: the folder (e.g.
flower_photos: daisy/, dandelion/, roses/, sunflowers/, tulips/) read with
image_dataset_from_directory and a seeded 80/20 split, streamed by libvtpu
while it trains (decoding threads filling a ring of device buffers: the
folder need not fit in memory); the tutorial's small convnet, or
libvtpu's ResNet18 / Xception (--model).

    examples/python/flowers.py --device cpu --data flower_photos
"""
import os

import _example  # finds vtpu in a checkout
import vtpu.keras as keras

parser = _example.parser(__doc__, "flowers", data_help="the folder of class "
                         "folders of images (required)")
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--image-size", type=int, default=64,
                    help="images are resized to this square (default 64)")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--model", choices=("small", "resnet18", "xception"),
                    default="small", help="the tutorial's net (default) or "
                    "one of keras.applications'")
parser.add_argument("--seed", type=int, default=123,
                    help="the split, the weights and shuffling")
args = parser.parse_args()
if not args.data:
    parser.error("--data: the folder of class folders is required")
if args.device:
    os.environ["VTPU_DEVICE"] = args.device
keras.utils.set_random_seed(args.seed)
size = (args.image_size, args.image_size)

train_ds, val_ds = keras.utils.image_dataset_from_directory(
    args.data, validation_split=0.2, subset="both", seed=args.seed,
    image_size=size, batch_size=args.batch_size)
class_names = train_ds.class_names
print(class_names)
num_classes = len(class_names)

if args.model == "small":
    model = keras.Sequential([
        keras.layers.Rescaling(1. / 255, input_shape=size + (3,)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(num_classes),
    ])
else:
    app = {"resnet18": keras.applications.ResNet18,
           "xception": keras.applications.Xception}[args.model]
    model = app(input_shape=size + (3,), classes=num_classes,
                classifier_activation=None)

model.compile(
    optimizer="adam",
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"])
model.summary()
model.fit(train_ds, validation_data=val_ds, epochs=args.epochs)

loss, acc = model.evaluate(val_ds, verbose=0)
print("Validation accuracy: %.4f" % acc)
