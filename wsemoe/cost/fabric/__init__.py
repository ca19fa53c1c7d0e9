"""Fabric and traffic: the mesh and its link loads, systems of wafers and switches, placements, traffic patterns, collectives, phase times."""
