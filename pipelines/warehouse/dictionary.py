"""Prints README's data dictionary from the schema: `python -m pipelines.warehouse.dictionary`."""

from pipelines.warehouse.schema import data_dictionary

if __name__ == "__main__":
    print(data_dictionary())
