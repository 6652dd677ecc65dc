"""Tests for the eval-suite generator."""
