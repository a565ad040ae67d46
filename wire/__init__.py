"""What travels on the wire beside the generated protos (bg/): how a typed error rides a failed
gRPC call (errors.py). Below the platform and the contracts, imported by the services and the
clients alike; protobuf alone, no transport."""
