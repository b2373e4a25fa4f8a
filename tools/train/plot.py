"""The loss-curve PNG, drawn with Pillow (matplotlib cannot be installed beside the project's
Boost 1.81 on Debian 12; see install-train-deps.sh)."""

import math

from PIL import Image, ImageDraw

W, H = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 30, 50
TRAIN_COLOUR = (70, 130, 200)
HELDOUT_COLOUR = (220, 90, 40)


def _ticks(lo, hi, n=6):
    step = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(step))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= step), default=step)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9:
        out.append(t)
        t += step
    return out


def loss_curve(log, path, smooth=20):
    steps = [r["step"] for r in log]
    loss = [r["loss"] for r in log]
    avg = []
    for i in range(len(loss)):  # trailing moving average
        window = loss[max(0, i - smooth + 1) : i + 1]
        avg.append(sum(window) / len(window))
    held = [(r["step"], r["heldout_loss"]) for r in log if "heldout_loss" in r]

    x_hi = max(steps)
    y_lo = math.floor(min(avg + [h for _, h in held]) * 2) / 2
    y_hi = math.ceil(min(max(avg), 9.0) * 2) / 2

    def xy(step, value):
        x = LEFT + (step / x_hi) * (W - LEFT - RIGHT)
        v = min(max(value, y_lo), y_hi)
        y = TOP + (1 - (v - y_lo) / (y_hi - y_lo)) * (H - TOP - BOTTOM)
        return x, y

    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    for t in _ticks(y_lo, y_hi):
        _, y = xy(0, t)
        d.line([(LEFT, y), (W - RIGHT, y)], fill=(230, 230, 230))
        d.text((8, y - 6), f"{t:.1f}", fill="black")
    for t in _ticks(0, x_hi):
        x, _ = xy(t, y_lo)
        d.line([(x, TOP), (x, H - BOTTOM)], fill=(230, 230, 230))
        d.text((x - 10, H - BOTTOM + 6), f"{int(t)}", fill="black")
    d.rectangle([LEFT, TOP, W - RIGHT, H - BOTTOM], outline="black")
    d.line([xy(s, v) for s, v in zip(steps, avg)], fill=TRAIN_COLOUR, width=2)
    if len(held) > 1:
        d.line([xy(s, v) for s, v in held], fill=HELDOUT_COLOUR, width=2)
    for s, v in held:
        x, y = xy(s, v)
        d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=HELDOUT_COLOUR)
    d.text((W // 2 - 20, H - 22), "step", fill="black")
    d.text((LEFT, 8), "cross-entropy (nats/token)", fill="black")
    d.text((W - 330, TOP + 10), f"train (moving average of {smooth} steps)", fill=TRAIN_COLOUR)
    d.text((W - 330, TOP + 24), "held-out (training numerics)", fill=HELDOUT_COLOUR)
    img.save(path, optimize=True)
