module github.com/csimigrate/csimigrate/examples/csimigrate

go 1.26.0

require github.com/csimigrate/csimigrate v0.0.0-00010101000000-000000000000

replace github.com/csimigrate/csimigrate => ../../
