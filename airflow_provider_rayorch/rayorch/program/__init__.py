"""The program layer: tracing, structural primitives, compiler and plan."""
