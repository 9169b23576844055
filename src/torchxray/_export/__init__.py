"""The targets of ``tx.export_check`` (`torchxray.export_check`), one file each, on the compile
check's export engine (`torchxray._compile.export`)."""
