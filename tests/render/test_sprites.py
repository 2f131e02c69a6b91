"""The sprite bank: every sprite's pyramid in one flat buffer, slots that agree with it."""

from __future__ import annotations

import threading

import numpy as np

from urban_gym.render import sprites
from urban_gym.render.textures import pedestrian_sprite


def test_bank_holds_each_sprite_once_with_its_pyramid():
    bank = sprites.SpriteBank(0.68)
    looks = [pedestrian_sprite(k) for k in range(12)]
    slots = [[] for _ in range(4)]

    def add(out):
        for spr in looks:
            out.append(bank.slot(spr))

    threads = [threading.Thread(target=add, args=(out,)) for out in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # every thread got the same slot for a sprite, one slot per sprite
    assert all(s == slots[0] for s in slots) and sorted(slots[0]) == list(range(len(looks)))
    pixels, levels, first, count, light_start, lights, height = bank.arrays()
    assert len(first) == len(count) == len(height) == len(light_start) - 1 == len(looks)
    for spr, s in zip(looks, slots[0]):
        pyramid = sprites._pyramid(spr, 0.68)
        assert count[s] == len(pyramid) and height[s] == spr.height_m
        for k, lv in enumerate(pyramid):
            off, h, w = levels[first[s] + k]
            np.testing.assert_array_equal(pixels[off : off + h * w * 4].reshape(h, w, 4), lv)
        assert light_start[s + 1] - light_start[s] == len(spr.glow)
