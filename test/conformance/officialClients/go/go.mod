module sluice.local/officialclients

go 1.22

require github.com/duneanalytics/duneapi-client-go v0.0.0

replace github.com/duneanalytics/duneapi-client-go => ../vendor/go
