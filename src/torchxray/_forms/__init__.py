"""Inspection, forms layer: field records, kinds, values as text, checks, recorded and recovered
constructor arguments behind `forms.form()`."""
