"""The one error every converter raises."""


class ConversionError(Exception):
    """A file that cannot be converted: the message names the option, field or problem."""
