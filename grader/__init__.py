"""attention-kit: hidden graders, build pipeline and nbgrader glue for the attention assignment."""
