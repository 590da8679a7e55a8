"""Tests of the real model providers (openai, anthropic) against fake upstream servers."""
