"""A neural position evaluator beside the engine: win / gammon / backgammon probabilities of a
position for the player on roll, from wildbg's published contact and race networks run in numpy
(issue 28). The engine stays pure and standard-library only; computer seats and the analysis use
this package. `evaluator/weights/PROVENANCE.md` says where the weights come from."""
