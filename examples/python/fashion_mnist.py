#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Fashion-MNIST seed notebook's Keras code, on vtpu.

Line for line the seed's, with tf.keras replaced by vtpu.keras and the TPU
cluster resolver and distribution strategy left out (vtpu.keras trains on
the device compile() names: $VTPU_DEVICE, else /dev/vtpu0 if present, else
libvtpu's cpu backend). docs/python.md puts the two side by side.

    examples/python/fashion_mnist.py --device cpu \\
        --data ../shared/datasets/fashion-mnist
"""
import os

import numpy as np

import _example  # finds vtpu in a checkout
import vtpu.keras

parser = _example.parser(__doc__, "Fashion-MNIST")
parser.add_argument("--seed", type=int, help="weights and shuffling "
                    "(default: random)")
args = parser.parse_args()
if args.device:
    os.environ["VTPU_DEVICE"] = args.device
if args.seed is not None:
    vtpu.keras.utils.set_random_seed(args.seed)

# ---- the seed's code --------------------------------------------------------
# (python/tests/test_examples.py compares this part with docs/python.md's
# table of the seed's code)

(x_train, y_train), (x_test, y_test) = vtpu.keras.datasets.fashion_mnist.load_data(args.data)
x_train = np.expand_dims(x_train, -1)
x_test = np.expand_dims(x_test, -1)


def create_model():
    model = vtpu.keras.models.Sequential()
    model.add(vtpu.keras.layers.Conv2D(64, (3, 3), input_shape=x_train.shape[1:]))
    model.add(vtpu.keras.layers.MaxPooling2D(pool_size=(2, 2), strides=(2,2)))
    model.add(vtpu.keras.layers.Activation('relu'))
    model.add(vtpu.keras.layers.Flatten())
    model.add(vtpu.keras.layers.Dense(10))
    model.add(vtpu.keras.layers.Activation('softmax'))
    return model


model = create_model()
model.compile(optimizer=vtpu.keras.optimizers.Adam(learning_rate=1e-3),
    loss=vtpu.keras.losses.sparse_categorical_crossentropy,
    metrics=[vtpu.keras.metrics.sparse_categorical_accuracy])

# batch_size=1000: the seed ran 60 steps per epoch over the 60000 images
# (one pass), batches of 1000, as the C trainer build/bin/fashion_mnist
# does; Keras' default would be 32, i.e. 60 steps over 1920 images only.
model.fit(x_train.astype(np.float32), y_train.astype(np.float32), epochs=5, steps_per_epoch=60,
    validation_data=(x_test.astype(np.float32), y_test.astype(np.float32)), validation_freq=5,
    batch_size=1000)

# ---- the result -------------------------------------------------------------

loss, acc = model.evaluate(x_test.astype(np.float32), y_test.astype(np.float32), verbose=0)
print("test_loss: %.4f - test_acc: %.4f" % (loss, acc))
