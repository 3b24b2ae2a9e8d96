"""The JSON-RPC server on stdio (rfcs/0003-rpc-contract.md): pygls' server and our methods, their
params, the error codes, the framer, the outbox and the strict encoder."""
