"""What a conclusion rests on: readings (modelling choices no source pins) and their robustness, calibration
unknowns with their ranges, global sensitivity, and calibration against public targets."""
