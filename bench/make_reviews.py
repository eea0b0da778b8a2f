#!/usr/bin/env python3
"""Writes a CSV of generated movie reviews (IMDB's "review,sentiment" layout) and a WordPiece
vocab.txt that covers them, for the data-pipeline benchmarks. Seeded: the same files every time.

Review lengths are log-normal in words, as real reviews are: most short, a long tail.
"""
import argparse
import csv
import math
import os
import random

GOOD = "great wonderful moving superb loved charming brilliant delightful gripping beautiful".split()
BAD = "boring awful dull weak hated clumsy tedious bland predictable messy".split()
NEUTRAL = ("the a film movie plot actors was and of story ending music it this scene i director "
           "characters script camera time first second that with for but not as one two".split())
PUNCT = [".", ",", "!", "?"]


def review(rng, positive, mean_words, sigma):
    mu = math.log(mean_words) - sigma * sigma / 2  # so the mean of the length is mean_words
    n = max(3, int(rng.lognormvariate(mu, sigma)))
    mood = GOOD if positive else BAD
    words = []
    for i in range(n):
        word = rng.choice(mood) if rng.random() < 0.2 else rng.choice(NEUTRAL)
        if i == 0 or words and words[-1] in (".", "!", "?"):
            word = word.capitalize()
        words.append(word)
        if rng.random() < 0.08:
            words.append(rng.choice(PUNCT))
    return " ".join(words).replace(" ,", ",").replace(" .", ".").replace(" !", "!").replace(" ?", "?") + "."


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="folder for reviews.csv and vocab.txt")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--mean-words", type=float, default=60)
    parser.add_argument("--sigma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    with open(os.path.join(args.out, "reviews.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["review", "sentiment"])
        for _ in range(args.rows):
            positive = rng.random() < 0.5
            out.writerow([review(rng, positive, args.mean_words, args.sigma), "positive" if positive else "negative"])
    # Whole words, then every letter alone and as a continuation: any word can be spelled.
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + PUNCT + GOOD + BAD + NEUTRAL
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab += letters + ["##" + c for c in letters]
    with open(os.path.join(args.out, "vocab.txt"), "w") as f:
        f.write("\n".join(dict.fromkeys(vocab)) + "\n")


if __name__ == "__main__":
    main()
