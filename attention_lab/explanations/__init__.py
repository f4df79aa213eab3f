"""Why each predict cell's answer is what it is: the explanations the level notebooks' answer
cells show once a prediction is written (:func:`attention_lab.predict.reveal`).

They live here, one module per level notebook (``level1`` for ``01_intuition``, ...), each a
string per question named after the question's variable, and not in the notebooks: an
explanation written in an answer cell's code or in the prose under it would be read before the
student predicts. A notebook imports its module as ``why`` and passes ``why=why.<question>``.
Every decimal number an explanation quotes is one its answer cell prints (a test holds them
equal), so an explanation cannot drift from the code.
"""
