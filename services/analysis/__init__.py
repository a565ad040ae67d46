"""The analysis service: every finished match judged by the evaluator, off the event stream."""
