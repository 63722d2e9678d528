#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The classic Keras MNIST multilayer perceptron, on vtpu.

784-512-512-10 with ReLU, dropout 0.2 and softmax, trained with Adam on
x / 255 (one-hot labels and categorical_crossentropy, as the Keras
example); about 98% test accuracy after a few epochs.

    examples/python/mnist_mlp.py --device cpu --data ../shared/datasets/mnist
"""
import _example  # finds vtpu in a checkout
import vtpu.keras as keras

parser = _example.parser(__doc__, "MNIST")
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--seed", type=int, help="weights, shuffling and "
                    "dropout (default: random)")
args = parser.parse_args()

num_classes = 10

(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data(args.data)
x_train = x_train.astype("float32") / 255.0
x_test = x_test.astype("float32") / 255.0
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")
y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = keras.Sequential([
    keras.layers.Flatten(input_shape=(28, 28)),
    keras.layers.Dense(512, activation="relu"),
    keras.layers.Dropout(0.2),
    keras.layers.Dense(512, activation="relu"),
    keras.layers.Dropout(0.2),
    keras.layers.Dense(num_classes, activation="softmax"),
])
model.summary()

model.compile(loss="categorical_crossentropy", optimizer="adam",
              metrics=["accuracy"], device=args.device, seed=args.seed)
history = model.fit(x_train, y_train, batch_size=args.batch_size,
                    epochs=args.epochs, verbose=1,
                    validation_data=(x_test, y_test))
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
