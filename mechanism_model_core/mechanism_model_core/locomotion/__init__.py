"""Interfaces for manipulators and locomotors over one mechanism (CLARAty sections 11-13)."""
