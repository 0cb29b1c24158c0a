from .cli import main

# Guarded: batch workers are spawned, and spawning re-imports the main module.
if __name__ == "__main__":
    main()
