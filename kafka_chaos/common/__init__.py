"""Small neutral pieces every layer may import (errors, waits); nothing here imports a project package."""
