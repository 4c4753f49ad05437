"""Evaluation: ranking and answer metrics, and the labelled-set runners built on them."""
